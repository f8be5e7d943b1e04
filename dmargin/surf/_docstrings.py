"""The SURF family's shared docstring sections: parameters, notes, STIR's p-values.

The estimators' docstrings (:mod:`dmargin.surf._surf`, :mod:`dmargin.surf._swrf`) are
built from these, so a parameter the family shares is described once.
"""

SURF_PARAMS = """
    Parameters
    ----------
    discrete_threshold : int, default=10
        A feature with at most this many distinct values is discrete: its
        difference is 0 (equal) or 1 (different), as skrebate's
        ``categorical_threshold``.  When the data mix discrete and
        continuous features, a discrete mismatch weighs ``A / A_discrete`` in
        the distance and a scored continuous difference larger than the
        feature's standard deviation counts 1 (skrebate's mixed data; the
        distances never ramp).  Missing values are not counted.  ``0`` makes
        every feature continuous.
    scale : {{"minmax"}} or None, default="minmax"
        ``"minmax"``: a continuous difference is ``|v1 - v2| / (max - min)``
        over the training data (skrebate's); ``None`` uses the raw values.
    n_anchors : int, float or None, default=None
        ``None`` scores every sample (O(N^2 A), skrebate's only mode); an int
        ``m`` (or a fraction of N) scores ``m`` anchors, drawn once per fit and
        stratified by class (uniform for a continuous target), against all N
        samples (O(m N A)); the scores are then divided by ``m``.{sample_note}{pvalues_param}
    n_features_to_select : int, float or None, default=None
        For ``transform``: ``None`` keeps features with positive score, an
        int the top ones, a float that fraction.
    rank_absolute : bool, default=False
        For ``transform``: rank the features by the absolute value of their
        scores (skrebate's ``rank_absolute``: a strongly negative score counts
        as informative); ``n_features_to_select=None`` then keeps every
        feature whose score is not 0.
    random_state : int, Generator or None, default=None
        Seeds the sample of anchors.
    device : {{"cpu", "cuda"}}, default="cpu"
        Where the two passes run.  ``"cuda"``: on the GPU (numba.cuda), in
        float64, each side of a threshold decided on the CPU's own distance,
        so the scores are the CPU's to rounding; for class labels on
        continuous features without missing values, neighbours weighing 1 and
        no STIR p-values (the SWRF family's weighted neighbours, other data and
        ``pvalues=True`` are refused with the reason).  A machine without a
        usable GPU is refused at ``fit`` with one line saying why.

    Attributes
    ----------
    feature_importances_ : ndarray of shape (n_features,)
        The scores, on skrebate's scale: per anchor{range_note}, a hit term in
        [-1, 0] and a miss term in [0, K - 1] (K classes; K = 2 for a
        continuous target), averaged over the anchors.
    discrete_features_ : ndarray of shape (n_features,), dtype=bool
        The features treated as discrete.
    compact_dtype_ : numpy.dtype or None
        ``uint8`` when the fit kept the rows as bytes (the compact path, see
        Notes), ``float32`` when it kept float32 input as float32 rows,
        ``None`` when it ran on float64 rows.
    anchor_indices_ : ndarray of shape (m,) or None
        The rows used as anchors (sorted), ``None`` when every row was one.
    classes_ : ndarray of shape (n_classes,)
        Class labels, sorted.  Not set for a continuous target.
    target_type_ : {{"binary", "multiclass", "continuous"}}
        The mode of the fit: class labels, or a continuous target
        (scikit-learn's ``type_of_target``: floats, not all integers).
    hit_bound_ : float
        Continuous target only: ``std(y, ddof=1)``, below which ``|y_a - y_j|``
        makes ``j`` a hit of ``a``.
    n_features_in_ : int
        Number of features seen in ``fit``.
    feature_names_in_ : ndarray of shape (n_features_in_,)
        Feature names, when ``X`` had string column names.{pvalues_attrs}
"""

SURF_SAMPLE = """  The threshold is then the mean distance of the
        anchors' rows (m x N distances, zeros of the anchors themselves
        included, as skrebate's mean of the full matrix)."""

SURF_NOTES = """
    Notes
    -----
    Scoring follows skrebate's ``compute_score``: for an anchor of class
    ``y`` with ``h`` neighbours of its class (difference sum ``H``) and ``m``
    of the others, ``m_c`` of class ``c`` (sum ``M_c``), among ``K`` classes,
    the score is ``(sum_c M_c (m_c / m) (K - 1) / m - H / h) / N`` (for two
    classes ``(M / m - H / h) / N``), each part only when its count is
    positive.

    A continuous target (``target_type_ == "continuous"``) is skrebate's
    continuous endpoint: the neighbour sets are the same as for classes
    (the thresholds depend on ``X`` only); a neighbour ``j`` of anchor ``a``
    is a hit when ``|y_a - y_j| < std(y, ddof=1)`` (``hit_bound_``), a miss
    otherwise, and the two-class score above is taken with those hits and
    misses, for the near and the far sets alike.  Such a fit takes the
    float64 path (``compact_dtype_`` is ``None``).

    Missing values (NaN) follow skrebate's rule: a pair's distance is the
    mean of its differences over the features present in both rows (a
    discrete mismatch counts 1), the thresholds' means and deviations leave
    out a pair with no feature in common, and every count above is per
    feature, of the neighbours that have it (an anchor missing a feature
    scores 0 on it); infinite values are refused.  Differences from skrebate:
    the target is continuous when ``type_of_target`` says so (floats, not
    all integers), so integer labels are always classes (skrebate treats
    more than 10 distinct labels as a continuous endpoint); SURF's and
    SURF*'s mean with missing values is that of the whole distance matrix
    (skrebate's missing-value path leaves its upper triangle 0, halving the
    mean); and a distance exactly at a threshold up to floating-point
    rounding may fall on the other side (the sums are accumulated in another
    order).  The distances are computed
    twice (once per pass), never stored: memory is O(N A).

    Compact rows (genotypes): integer or boolean ``X`` (numpy, pandas or
    dask, judged by its dtype) whose values all lie in ``[0, 255]`` and whose
    features are all discrete (``discrete_threshold``) is fitted as ``uint8``,
    automatically: no float64 copy (2,350 x 230,000 SNPs take 0.5 GB instead
    of 4.3 GB), the distance (the number of mismatched features) computed on
    bit planes of the rows (popcount, 64 features an instruction) and the
    neighbours' differences summed on the bytes, one tile of anchors at a
    time.  Dask blocks are converted where they live and read by the
    general kernels, whose per-row partials (N x classes x A float64 in all)
    still bound the width a cluster fits: GWAS widths (10^5 SNPs and more)
    run in-process.  The scores equal the float64 path's (the same rows
    given as floats) to rounding in the last bits: every distance and sum is
    an integer.  Continuous, mixed, negative or wider values, float input and
    a continuous target take the float64 path unchanged (``compact_dtype_``
    is ``None``); to force it on genotypes, pass them as floats.

    Float32 rows: ``float32`` ``X`` (numpy, pandas or dask; class labels)
    stays ``float32``, half the memory of float64 rows: scaled in float64
    and rounded to float32 once (a block of rows at a time), then read by
    the kernels, which compute every difference, distance and sum in
    float64.  The scores equal the float64 path's on the same float32
    values to rounding in the last bits; against float64 rows scaled
    without the rounding they differ by it (about 1e-7 relative, and a
    neighbour whose distance lies within it of a threshold may change
    sides).  Pass float64 to keep float64 rows.
"""


PVALUES_PARAM = """
    pvalues : bool, default=False
        Two classes: STIR's p-values for the scores (``pvalues_``, Notes),
        from a third pass over the same pairs (about twice the fit's time)
        and a sample of at most 1,000 rows for the graph's triangles; only
        where STIR's law has been shown calibrated (Notes) and while no
        feature carries signal (Simes' combination of STIR's p-values over
        0.05; else ``global_pvalue_`` alone), elsewhere a warning.
    n_permutations : int, default=0
        ``B > 0``: permutation p-values of the global null (no feature
        related to the labels) from B more passes with the labels permuted,
        exact for exchangeable labels and any number of classes
        (``B + 1 >= A / q`` for a discovery at level q to be possible)."""

PVALUES_ATTRS = """
    t_statistics_ : ndarray of shape (n_features,)
        With ``pvalues=True``: STIR's pseudo t-statistics, each feature's
        differences to the misses against those to the hits (Notes).
        Otherwise, or when the fit declined them, not set: reading it
        raises :class:`dmargin.PValuesUnavailableError`, which says why.
    pvalues_ : ndarray of shape (n_features,)
        With ``pvalues=True``: one-sided p-values of ``t_statistics_``; with
        ``n_permutations=B``: ``(1 + #{b : W_b >= W}) / (B + 1)``.  Not set
        (:class:`dmargin.PValuesUnavailableError`) without either, or when
        declined.
    qvalues_ : ndarray of shape (n_features,)
        ``pvalues_`` adjusted by Benjamini-Hochberg.  Like ``pvalues_``, they
        test the global null (no feature related to the labels): they are
        not per-feature evidence when other features carry the signal, and
        control the false discovery rate under the global null only, not
        among the features flagged once some features matter
        (``docs/pvalues.md``); :class:`dmargin.KnockoffSelector` selects the
        features that matter with the rate controlled given the others.
    global_pvalue_ : float
        Simes' combination of ``pvalues_`` (their smallest q-value), a
        p-value of the global null; kept when STIR's per-feature p-values
        are declined because a feature carries signal."""


STIR_NOTES = """
    ``pvalues=True`` (two classes, no missing value) adds STIR's p-values
    (Le et al. 2019) as on ``ReliefF``: the score is STIR's difference of
    the mean miss and mean hit differences, and dmargin reads its
    t-statistic against the law its neighbour graph implies
    (:mod:`dmargin.relief._stir`).  MultiSURF's neighbourhoods hold about a third
    of the rows, so the graph is nearly dense and the score far from
    normal (skewness about 0.5 and excess kurtosis about 1 on uniform rows,
    at any N); the paper's count reads it as a t-test with a pair per
    degree of freedom.  The fit then sums the squared differences in its
    second pass and runs a third over the same pairs for the graph's row
    sums, powers and pairs found from both rows (exact, where the rows are);
    the triangles and four-cycles come from at most 1,000 rows (every row
    up to that many; with a sample of anchors, up to half of them among the
    anchors), whose distances are computed where the rows are.  Measured at
    1,200 rows from 300 of them: the triangles and four-cycles within 5 %,
    the p-values within 2 %.  On null data (uniform rows, N = 300, A = 50,
    1,000 draws, random labels; the 925 within 45:55) 4.9 % of the p-values
    fall under 0.05 and 0.11 % under 0.001, and 5.2 % of the draws make a
    discovery at q = 0.05 (4.2 % with balanced labels; the paper's test:
    about 60 % of 100 draws).  The law is not calibrated everywhere: on heavy-tailed or skewed
    features, few-valued ones (genotypes) and classes of 1:3 it makes too many
    discoveries or far too few (``benchmarks/_nulls.py``, ``docs/pvalues.md``).  The fit
    therefore returns STIR's p-values only where they have been shown
    calibrated -- two classes, the smaller at least 45 % of the rows, every
    feature with more than 10 distinct values, ``|skewness| <= 1`` and excess
    kurtosis ``<= 4`` in the moment sample -- and elsewhere warns
    (:class:`dmargin.UncalibratedPValuesWarning`) and returns none.
    ``n_permutations=B`` gives exact permutation p-values on any data,
    ``(1 + #{b : W_b >= W}) / (B + 1)`` over B more passes with the labels
    permuted (and a sample of anchors redrawn for them).  Both kinds test the
    global null; once Simes' combination of STIR's p-values
    (``global_pvalue_``) is at most 0.05 a feature carries signal, the
    others' p-values are off the law, and the fit warns and keeps
    ``global_pvalue_`` alone.  For the features that matter, with the false
    discovery rate controlled given the other features, use
    :class:`dmargin.KnockoffSelector`.
"""
