"""AdaBoost with decision stumps and the selections built on its margins.

AdaBoost, SBS-MF, AdaBoost-CR and BDSFS, over stumps on binned features.  The public
names are exported by :mod:`dmargin`.
"""
