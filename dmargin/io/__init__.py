"""What dmargin reads: Parquet datasets and the training data laid out for a fit.

Parquet reading (``_parquet``) and what a dataset holds and the blocks it is read in
(``_parquet_plan``), paths that must be regular files (``_special_files``), and scaling, labels and row blocks
for the engine (``_training``).  :func:`dmargin.read_parquet` and
:func:`dmargin.iter_parquet` are the public names.
"""
