"""What dmargin reads: Parquet datasets and the training data laid out for a fit.

:func:`dmargin.read_parquet` and :func:`dmargin.iter_parquet` are the public names.
"""
