"""AdaBoost with decision stumps and the selections built on its margins.

AdaBoost, SBS-MF, AdaBoost-CR and BDSFS (``_boosting``); the stumps on binned features,
their search and committee (``_stumps``).  The public names are exported by :mod:`dmargin`.
"""
