"""The measured figures the project's pages quote, by name.

A page quotes a figure as ``<!-- figure: NAME -->VALUE<!-- /figure -->``, and
``python benchmarks/report.py`` writes VALUE from this registry: :data:`FIGURES`
maps each NAME (``family.what_it_is``) to a :class:`Figure`, whose expression is
evaluated against ``benchmarks/results/`` and formatted with its format.  The
expression language (references ``BENCHMARK[/VARIANT]#PATH``, numbers, ``+ - * /``,
parentheses, ``min`` and ``max``) is described in report.py's docstring.

``report.py --check`` fails on a marker whose name is not here and on a name that
no page quotes, so the registry holds exactly the figures the pages show.  To quote
a new figure, add its entry here and its marker on the page, then run report.py.
"""

from typing import NamedTuple


class Figure(NamedTuple):
    """One quoted figure: where its value comes from, how it is written, what it is."""

    #: References into ``benchmarks/results/`` and arithmetic (report.py's docstring).
    expression: str
    #: A Python format string given the value: ``{:.0f} s``, ``{:.2f}x``, ``{:,.0f} MiB``.
    format: str
    #: One line: what the figure measures, for a reader of this registry.
    description: str


def _row(reference: str, **where) -> str:
    """The item of the list at ``reference`` whose keys hold these values:
    ``BENCHMARK[/VARIANT]#LIST/key=value&key=value``."""
    conditions = "&".join(f"{key}={value}" for key, value in where.items())
    return f"{reference}/{conditions}"


def _ref(text: str) -> str:
    """A reference quoted as the expression language wants it when it holds a space."""
    return f'"{text}"' if " " in text else text


_WDBC = "wdbc + 20 uniform noise columns"


def _evidence(cell: str, method: str, q: float, field: str) -> str:
    """One (cell, method, q) row of bench_evidence's report battery."""
    return _ref(f"{_row('evidence/report#battery', cell=cell, method=method, q=q)}/{field}")


def _stir(variant: str, cell: str, method: str, field: str) -> str:
    """One (cell, method) row of a bench_stir battery."""
    row = _row(f"stir/{variant}#battery", cell=f"{cell}, N = 300, k = 10", method=method)
    return _ref(f"{row}/{field}")


def _stir_check(cell: str, method: str) -> str:
    """The FDR at q = 0.05 of one (cell, method) row of the held-out STIR battery."""
    return _ref(f"{_row('stir/battery-check#battery', cell=cell, method=method)}/fdr_at_q_0.05")


def _power(n: int, method: str, field: str) -> str:
    """One (N, method) row of bench_stir's planted-signal power run."""
    return _ref(f"{_row('stir/power#planted', n=n, method=f'{method} STIR')}/{field}")


def _pooled(field: str, weight: str, *refs) -> str:
    """``field`` averaged over ``refs`` weighted by ``weight`` (each ref a function of a field)."""
    num = " + ".join(f"{ref(field)} * {ref(weight)}" for ref in refs)
    den = " + ".join(ref(weight) for ref in refs)
    return f"( {num} ) / ( {den} )"


def _span(*refs) -> tuple[str, str]:
    """``min ( ... )`` and ``max ( ... )`` over ``refs``: the ends of a range."""
    inner = " , ".join(refs)
    return f"min ( {inner} )", f"max ( {inner} )"


_LARGE = "evidence/large-10000000#large"
_GWAS_VLS_FITS = "gwas/vls#vs_skrebate/fits"
_SK08 = "skrebate08_speed#summary"
_MURELIEF_SK = "gametes#skrebate/comparison/MuRelief"
_SPARK_1E7 = "spark#comparison/n=10000000&estimator=relieff"
_STIR_NORMAL = [
    lambda field, v=v: _stir(v, "normal, 1:1", "ReliefF STIR", field)
    for v in ("battery-report", "battery-report-more")
]
_STIR_CHECK_INSIDE = [
    _stir_check("logistic, 1:1, N = 300, k = 10", "MultiSURF STIR"),
    _stir_check("uniform, 1:1, N = 5000, k = 10", "MultiSURF STIR"),
    _stir_check("uniform, 1:1, N = 1000, k = 100", "ReliefF STIR"),
    _stir_check("uniform, 1:1, N = 1000, k = 10, anchors 0.2 N", "MultiSURF STIR"),
]
_BOTH_STIRS = ("ReliefF STIR", "MultiSURF STIR")
_HEAVY = _span(
    *(_stir("battery-tune", "heavy-tailed, 1:1", m, "fdr_at_q_0.05") for m in _BOTH_STIRS)
)
_SKEWED = _span(*(_stir("battery-tune", "skewed, 1:1", m, "fdr_at_q_0.05") for m in _BOTH_STIRS))
_POWER_FDR = _span(
    *(_power(n, m, "fdr_at_q_0.05") for n in (300, 2000) for m in ("ReliefF", "MultiSURF"))
)
_CHECK = _span(*_STIR_CHECK_INSIDE)
_SWRF = [f"{_SK08}/skrebate_over_dmargin/{name}" for name in ("SWRF", "MultiSWRF", "MultiSWRFDB")]
_SWRF_STAR = [f"{name}star" for name in _SWRF]

#: Every figure a page quotes, by name.
FIGURES: dict[str, Figure] = {
    # ------------------------------------------------------------ first fit
    "first_fit.wall_s": Figure(
        "first_fit#targets/first_fit_wall_s",
        "{:.0f} s",
        "the first IRelief or ReliefF fit after installing, numba compiling its kernels",
    ),
    "first_fit.cold_both_wall_s": Figure(
        "first_fit#targets/cold_first_fits_wall_s",
        "{:.0f} s",
        "the first IRelief and ReliefF fits together after installing",
    ),
    # ------------------------------------------------------------ knockoffs (bench_evidence)
    "evidence.wdbc_draws": Figure(
        _evidence(_WDBC, "ReliefF knockoffs", 0.1, "draws"),
        "{:.0f}",
        "draws of the noise columns in the wdbc + 20 noise columns cell",
    ),
    "evidence.wdbc_fdr_knockoffs": Figure(
        _evidence(_WDBC, "ReliefF knockoffs", 0.1, "fdr"),
        "{:.3f}",
        "noise share of KnockoffSelector(ReliefF())'s selections on wdbc + noise, q = 0.1",
    ),
    "evidence.wdbc_fdr_permutations": Figure(
        _evidence(_WDBC, "ReliefF permutations (B = 199)", 0.1, "fdr"),
        "{:.3f}",
        "noise share of ReliefF's permutation q-value selections on wdbc + noise, q = 0.1",
    ),
    "evidence.wdbc_fdr_stir": Figure(
        _evidence(_WDBC, "ReliefF STIR", 0.1, "fdr"),
        "{:.3f}",
        "noise share of ReliefF's STIR selections on wdbc + noise, q = 0.1",
    ),
    "evidence.wdbc_real_knockoffs_q01": Figure(
        _evidence(_WDBC, "ReliefF knockoffs", 0.1, "real_features_selected"),
        "{:.1f}",
        "wdbc features KnockoffSelector(ReliefF()) selects on average, q = 0.1",
    ),
    "evidence.wdbc_real_knockoffs_q02": Figure(
        _evidence(_WDBC, "ReliefF knockoffs", 0.2, "real_features_selected"),
        "{:.1f}",
        "wdbc features KnockoffSelector(ReliefF()) selects on average, q = 0.2",
    ),
    "evidence.wdbc_fdr_gaussian": Figure(
        _evidence(_WDBC, "ReliefF knockoffs (gaussian)", 0.1, "fdr"),
        "{:.3f}",
        "noise share of the selections with Gaussian knockoffs on wdbc + noise, q = 0.1",
    ),
    "evidence.wdbc_real_groups_multisurf": Figure(
        _evidence(_WDBC, "MultiSURF group knockoffs", 0.2, "real_features_selected"),
        "{:.1f}",
        "wdbc features selected on average by group knockoffs around MultiSURF, q = 0.2",
    ),
    "evidence.wdbc_real_groups_multisurf_q01": Figure(
        _evidence(_WDBC, "MultiSURF group knockoffs", 0.1, "real_features_selected"),
        "{:.1f}",
        "wdbc features selected on average by group knockoffs around MultiSURF, q = 0.1",
    ),
    "evidence.wdbc_real_groups_relieff": Figure(
        _evidence(_WDBC, "ReliefF group knockoffs", 0.2, "real_features_selected"),
        "{:.1f}",
        "wdbc features selected on average by group knockoffs around ReliefF, q = 0.2",
    ),
    "evidence.wdbc_fdr_groups_multisurf": Figure(
        _evidence(_WDBC, "MultiSURF group knockoffs", 0.2, "fdr"),
        "{:.3f}",
        "noise share of group knockoffs' selections around MultiSURF on wdbc + noise, q = 0.2",
    ),
    "evidence.wdbc_fdr_groups_relieff": Figure(
        _evidence(_WDBC, "ReliefF group knockoffs", 0.2, "fdr"),
        "{:.3f}",
        "noise share of group knockoffs' selections around ReliefF on wdbc + noise, q = 0.2",
    ),
    "evidence.stir_fdr_rho06": Figure(
        _evidence(
            "correlated normal, rho 0.6, 1:1, N = 500, A = 50, k = 10", "ReliefF STIR", 0.1, "fdr"
        ),
        "{:.3f}",
        "FDR of ReliefF's STIR selections, null features correlated 0.6 with signal, q = 0.1",
    ),
    "evidence.stir_fdr_rho08": Figure(
        _evidence(
            "correlated normal, rho 0.8, 1:1, N = 500, A = 50, k = 10", "ReliefF STIR", 0.1, "fdr"
        ),
        "{:.3f}",
        "FDR of ReliefF's STIR selections, null features correlated 0.8 with signal, q = 0.1",
    ),
    "evidence.power_multisurf_q01": Figure(
        _evidence(
            "normal, 1:1, N = 5,000, A = 50, k = 10, 500 anchors",
            "MultiSURF knockoffs",
            0.1,
            "power",
        ),
        "{:.3f}",
        "share of informative features the MultiSURF knockoff filter finds at N = 5,000, q = 0.1",
    ),
    "evidence.power_multisurf_q02": Figure(
        _evidence(
            "normal, 1:1, N = 5,000, A = 50, k = 10, 500 anchors",
            "MultiSURF knockoffs",
            0.2,
            "power",
        ),
        "{:.3f}",
        "share of informative features the MultiSURF knockoff filter finds at N = 5,000, q = 0.2",
    ),
    "evidence.power_relieff_q02": Figure(
        _evidence(
            "normal, 1:1, N = 5,000, A = 50, k = 10, 500 anchors", "ReliefF knockoffs", 0.2, "power"
        ),
        "{:.3f}",
        "share of informative features the ReliefF knockoff filter finds at N = 5,000, q = 0.2",
    ),
    "evidence.gaussian_fdr_uniform_1to4": Figure(
        _evidence(
            "uniform, 1:4, N = 300, A = 40, k = 10", "ReliefF knockoffs (gaussian)", 0.1, "fdr"
        ),
        "{:.3f}",
        "FDR of Gaussian knockoffs on uniform features with classes 1:4, q = 0.1",
    ),
    "evidence.gaussian_fdr_pima": Figure(
        _evidence("pima + 20 uniform noise columns", "ReliefF knockoffs (gaussian)", 0.1, "fdr"),
        "{:.3f}",
        "FDR of Gaussian knockoffs on Pima + 20 noise columns, q = 0.1",
    ),
    "evidence.genotypes_refused": Figure(
        _evidence(
            "genotypes, 1:1, N = 1,000, A = 50, k = 10", "ReliefF knockoffs", 0.1, "refused_draws"
        ),
        "{:.0f}",
        "genotype draws the knockoff sampler's independence check refused",
    ),
    "evidence.stir_fdr_uniform_1to4": Figure(
        _evidence("uniform, 1:4, N = 300, A = 40, k = 10", "ReliefF STIR", 0.1, "fdr"),
        "{:.3f}",
        "FDR of ReliefF's STIR selections on uniform features with classes 1:4, q = 0.1",
    ),
    "evidence.permutations_fdr_uniform_1to4": Figure(
        _evidence(
            "uniform, 1:4, N = 300, A = 40, k = 10", "ReliefF permutations (B = 199)", 0.1, "fdr"
        ),
        "{:.3f}",
        "FDR of ReliefF's permutation q-values on uniform features with classes 1:4, q = 0.1",
    ),
    # ------------------------------------------------------------ knockoffs at 10^7 rows
    "large.scaling_one_worker_s": Figure(
        '"large/n1e6-scaling#scaling/fit_s/1"',
        "{:.2f} s",
        "ReliefF(n_anchors=1000) at 10^6 Parquet rows on 1 worker, median of 5 fits",
    ),
    "large.scaling_two_workers_s": Figure(
        '"large/n1e6-scaling#scaling/fit_s/2"',
        "{:.2f} s",
        "the same fit on 2 workers (1 thread each), median of 5 fits",
    ),
    "large.scaling_speedup": Figure(
        '"large/n1e6-scaling#scaling/fit_s/1" / "large/n1e6-scaling#scaling/fit_s/2"',
        "{:.2f}x",
        "2 workers over 1, ReliefF(n_anchors=1000) at 10^6 rows (issue's target 1.85x)",
    ),
    "large.scaling_again_one_worker_s": Figure(
        '"large/n1e6-scaling#scaling/fit_again_s/1"',
        "{:.2f} s",
        "the next fit on the same 1-worker cluster, median of the repeats",
    ),
    "large.scaling_again_two_workers_s": Figure(
        '"large/n1e6-scaling#scaling/fit_again_s/2"',
        "{:.2f} s",
        "the next fit on the same 2-worker cluster, median of the repeats",
    ),
    "large.scaling_again_speedup": Figure(
        '"large/n1e6-scaling#scaling/speedup_again"',
        "{:.2f}x",
        "2 workers over 1 for the next fit on the same cluster",
    ),
    "large.scaling_zen1_speedup": Figure(
        '"large/n1e6-scaling-zen1#scaling/fit_s/1" / "large/n1e6-scaling-zen1#scaling/fit_s/2"',
        "{:.2f}x",
        "2 workers over 1, the first fit, on the Zen 1 machine of the run before",
    ),
    "large.scaling_zen1_again_speedup": Figure(
        '"large/n1e6-scaling-zen1#scaling/speedup_again"',
        "{:.2f}x",
        "2 workers over 1, the next fit on the same cluster, on that Zen 1 machine",
    ),
    "large.scaling_two_tiles_speedup": Figure(
        '"large/n1e6-scaling-two-tiles#scaling/fit_s/1" / "large/n1e6-scaling-two-tiles#scaling/fit_s/2"',
        "{:.2f}x",
        "2 workers over 1 when a row block's 1,000 anchors were two tiles (Zen 3 machine)",
    ),
    "large.scaling_three_reads_one_worker_s": Figure(
        '"large/n1e6-scaling-three-reads#scaling/fit_s/1"',
        "{:.2f} s",
        "the same fit when it read the rows three times, 1 worker",
    ),
    "large.scaling_three_reads_two_workers_s": Figure(
        '"large/n1e6-scaling-three-reads#scaling/fit_s/2"',
        "{:.2f} s",
        "the same fit when it read the rows three times, 2 workers",
    ),
    "large.scaling_three_reads_speedup": Figure(
        '"large/n1e6-scaling-three-reads#scaling/fit_s/1" / "large/n1e6-scaling-three-reads#scaling/fit_s/2"',
        "{:.2f}x",
        "the same fit when it read the rows three times, 2 workers over 1",
    ),
    "large.scaling_pool_8_speedup": Figure(
        '"large/n1e6-scaling-pool-8#scaling/fit_s/1" / "large/n1e6-scaling-pool-8#scaling/fit_s/2"',
        "{:.2f}x",
        "2 workers over 1, the run before the pool offered 32 smallest keys a class",
    ),
    "evidence.large_rows": Figure(
        f"{_LARGE}/n_rows", "{:,}", "rows of bench_evidence --large's knockoff fit"
    ),
    "evidence.large_features": Figure(
        f"{_LARGE}/n_features", "{:d}", "features of bench_evidence --large's rows"
    ),
    "evidence.large_informative": Figure(
        f"{_LARGE}/informative", "{:d}", "informative features the large knockoff fit selected"
    ),
    "evidence.large_selector_s": Figure(
        f"{_LARGE}/selector_s", "{:.0f} s", "KnockoffSelector(ReliefF(n_anchors=500)) on 10^7 rows"
    ),
    "evidence.large_selector_over_plain": Figure(
        f"{_LARGE}/selector_over_plain",
        "{:.1f}x",
        "the large knockoff fit over a plain ReliefF(n_anchors=500) fit on the same rows",
    ),
    "evidence.large_fit_cost_s": Figure(
        f"{_LARGE}/fit_cost_s", "{:.0f} s", "what fit_cost said the large knockoff fit would take"
    ),
    "evidence.large_knockoffs_s": Figure(
        f"{_LARGE}/sampler_fit_s + {_LARGE}/augment_s",
        "{:.0f} s",
        "the knockoffs' own passes in the large fit: learning the law and drawing",
    ),
    "evidence.large_inner_fit_s": Figure(
        f"{_LARGE}/inner_fit_s", "{:.0f} s", "the inner ReliefF fit on [F, F~] in the large fit"
    ),
    "evidence.large_peak_before_gib": Figure(
        f"{_LARGE}/peak_rss_before_mib / 1024",
        "{:.1f} GiB",
        "the process's peak memory before the large knockoff fit",
    ),
    "evidence.large_rows_gib": Figure(
        f"{_LARGE}/rows_mib / 1024", "{:.1f} GiB", "the large fit's rows as float64"
    ),
    "evidence.large_peak_gib": Figure(
        f"{_LARGE}/peak_rss_mib / 1024",
        "{:.1f} GiB",
        "the process's peak memory during the large knockoff fit",
    ),
    # ------------------------------------------------------------ STIR (bench_stir)
    "stir.fdr_multisurf_uniform_1to1p5": Figure(
        _stir("battery-report-more", "uniform, 1:1.5", "MultiSURF STIR", "fdr_at_q_0.05"),
        "{:.3f}",
        "FDR at q = 0.05 of MultiSURF's STIR on uniform features, classes 1:1.5, more draws",
    ),
    "stir.draws_multisurf_uniform_1to1p5": Figure(
        _stir("battery-report-more", "uniform, 1:1.5", "MultiSURF STIR", "draws"),
        "{:,}",
        "the further draws of MultiSURF's STIR on uniform features, classes 1:1.5",
    ),
    "stir.fdr_relieff_normal_pooled": Figure(
        _pooled("fdr_at_q_0.05", "draws", *_STIR_NORMAL),
        "{:.3f}",
        "FDR at q = 0.05 of ReliefF's STIR on normal features, pooled over both report runs",
    ),
    "stir.draws_relieff_normal_pooled": Figure(
        " + ".join(ref("draws") for ref in _STIR_NORMAL),
        "{:,}",
        "draws of ReliefF's STIR on normal features over both report runs",
    ),
    "stir.fdr_heavy_tailed_min": Figure(
        _HEAVY[0], "{:.2f}", "lower FDR at q = 0.05 of the two STIRs on Student t3 features"
    ),
    "stir.fdr_heavy_tailed_max": Figure(
        _HEAVY[1], "{:.2f}", "higher FDR at q = 0.05 of the two STIRs on Student t3 features"
    ),
    "stir.fdr_skewed_min": Figure(
        _SKEWED[0], "{:g}", "lower FDR at q = 0.05 of the two STIRs on exponential features"
    ),
    "stir.fdr_skewed_max": Figure(
        _SKEWED[1], "{:g}", "higher FDR at q = 0.05 of the two STIRs on exponential features"
    ),
    "stir.fdr_relieff_uniform_1to3": Figure(
        _stir("battery-tune", "uniform, 1:3", "ReliefF STIR", "fdr_at_q_0.05"),
        "{:.2f}",
        "FDR at q = 0.05 of ReliefF's STIR on uniform features with classes 1:3 (tuning seeds)",
    ),
    "stir.fdr_relieff_uniform_1to9": Figure(
        _stir("battery-tune", "uniform, 1:9", "ReliefF STIR", "fdr_at_q_0.05"),
        "{:.2f}",
        "FDR at q = 0.05 of ReliefF's STIR on uniform features with classes 1:9 (tuning seeds)",
    ),
    "stir.declined_multisurf_logistic": Figure(
        _stir("battery-check", "logistic, 1:1", "MultiSURF STIR", "warned"),
        "{:d}",
        "held-out draws on logistic features where MultiSURF declined STIR's p-values",
    ),
    "stir.draws_multisurf_logistic": Figure(
        _stir("battery-check", "logistic, 1:1", "MultiSURF STIR", "draws"),
        "{:d}",
        "held-out draws of MultiSURF's STIR on logistic features",
    ),
    "stir.fdr_check_inside_min": Figure(
        _CHECK[0], "{:g}", "lowest FDR of the held-out cells above 0.05 inside STIR's domain"
    ),
    "stir.fdr_check_inside_max": Figure(
        _CHECK[1], "{:g}", "highest FDR of the held-out cells above 0.05 inside STIR's domain"
    ),
    "stir.power_multisurf_n300": Figure(
        f"{_power(300, 'MultiSURF', 'power_at_q_0.05')} * 100",
        "{:.0f} %",
        "planted SNP pairs MultiSURF's STIR finds at q = 0.05, N = 300",
    ),
    "stir.power_multisurf_n2000": Figure(
        f"{_power(2000, 'MultiSURF', 'power_at_q_0.05')} * 100",
        "{:.0f} %",
        "planted SNP pairs MultiSURF's STIR finds at q = 0.05, N = 2,000",
    ),
    "stir.power_relieff_n300": Figure(
        f"{_power(300, 'ReliefF', 'power_at_q_0.05')} * 100",
        "{:.0f} %",
        "planted SNP pairs ReliefF's STIR finds at q = 0.05, N = 300",
    ),
    "stir.power_relieff_n2000": Figure(
        f"{_power(2000, 'ReliefF', 'power_at_q_0.05')} * 100",
        "{:.0f} %",
        "planted SNP pairs ReliefF's STIR finds at q = 0.05, N = 2,000",
    ),
    "stir.power_fdr_min": Figure(
        _POWER_FDR[0], "{:g}", "lowest FDR at q = 0.05 of the four planted-signal power runs"
    ),
    "stir.power_fdr_max": Figure(
        _POWER_FDR[1], "{:g}", "highest FDR at q = 0.05 of the four planted-signal power runs"
    ),
    # ------------------------------------------------------------ SURF family and skrebate
    "surf.multisurf_over_fast_select": Figure(
        "surf_speed#targets/multisurf_fast_select_over_dmargin",
        "{:.0f}x",
        "fast-select's MultiSURF time over dmargin's at N = 8,000 on one thread",
    ),
    "surf.multisurf_over_skrebate": Figure(
        "surf_speed#targets/multisurf_skrebate_over_dmargin",
        "{:.0f}x",
        "skrebate's MultiSURF time over dmargin's at N = 8,000 on one thread",
    ),
    # ------------------------------------------------------------ fast-select, interleaved rounds
    "relief.rounds_relieff_8000": Figure(
        "relief_speed#targets/relieff_rounds_ratio_8000",
        "{:.1f}x",
        "fast-select's ReliefF time over dmargin's, interleaved rounds, N = 8,000, one thread",
    ),
    "relief.rounds_relieff_2000": Figure(
        "relief_speed#targets/relieff_rounds_ratio_2000",
        "{:.1f}x",
        "fast-select's ReliefF time over dmargin's, interleaved rounds, N = 2,000, one thread",
    ),
    "surf.rounds_multisurf_8000": Figure(
        "surf_speed/rounds#targets/multisurf_rounds_ratio_8000",
        "{:.2f}x",
        "fast-select's MultiSURF time over dmargin's, interleaved rounds, N = 8,000, one thread",
    ),
    "surf.rounds_multisurf_2000": Figure(
        "surf_speed/rounds#targets/multisurf_rounds_ratio_2000",
        "{:.2f}x",
        "fast-select's MultiSURF time over dmargin's, interleaved rounds, N = 2,000, one thread",
    ),
    "surf.rounds_repeat_multisurf_8000": Figure(
        "surf_speed/rounds-repeat#targets/multisurf_rounds_ratio_8000",
        "{:.2f}x",
        "the same MultiSURF rounds at N = 8,000, run again later the same hour",
    ),
    "surf.rounds_repeat_multisurf_2000": Figure(
        "surf_speed/rounds-repeat#targets/multisurf_rounds_ratio_2000",
        "{:.2f}x",
        "the same MultiSURF rounds at N = 2,000, run again later the same hour",
    ),
    "relief.threads_relieff_8000": Figure(
        "relief_speed#targets/relieff_two_threads_over_one",
        "{:.2f}x",
        "dmargin ReliefF's steady fit on one thread over two, N = 8,000",
    ),
    "relief.two_cores_f32": Figure(
        "relief_speed#targets/machine_two_cores_float32",
        "{:.2f}x",
        "the machine's float32 distance tile on two cores at once over one (_peak.py)",
    ),
    "relief.kernel_peak_min": Figure(
        "relief_speed#targets/kernel_fraction_f32_min * 100",
        "{:.0f} %",
        "lowest Relief-family kernel rate in a fit, share of one core's float32 peak",
    ),
    "relief.kernel_peak_max": Figure(
        "relief_speed#targets/kernel_fraction_f32_max * 100",
        "{:.0f} %",
        "highest Relief-family kernel rate in a fit, share of one core's float32 peak",
    ),
    "skrebate08.speedup_min": Figure(
        f"{_SK08}/skrebate_over_dmargin_min",
        "{:.0f}x",
        "lowest skrebate over dmargin time at N = 8,000 across estimators (MuRelief)",
    ),
    "skrebate08.speedup_max": Figure(
        f"{_SK08}/skrebate_over_dmargin_max",
        "{:.0f}x",
        "highest skrebate over dmargin time at N = 8,000 across estimators (VLS)",
    ),
    "skrebate08.swrf_speedup_min": Figure(
        f"min ( {_SWRF[0]} , min ( {_SWRF[1]} , {_SWRF[2]} ) )",
        "{:.0f}x",
        "lowest skrebate over dmargin time of the plain SWRF family at N = 8,000",
    ),
    "skrebate08.swrf_speedup_max": Figure(
        f"max ( {_SWRF_STAR[0]} , max ( {_SWRF_STAR[1]} , {_SWRF_STAR[2]} ) )",
        "{:.0f}x",
        "highest skrebate over dmargin time of the SWRF* family at N = 8,000",
    ),
    "skrebate08.fused_share_min": Figure(
        f"{_SK08}/fraction_of_fused_f64_min * 100",
        "{:.0f} %",
        "lowest pair-feature rate of a fit against the fused float64 loop's",
    ),
    "skrebate08.fused_share_max": Figure(
        f"{_SK08}/fraction_of_fused_f64_max * 100",
        "{:.0f} %",
        "highest pair-feature rate of a fit against the fused float64 loop's",
    ),
    "skrebate08.max_abs_diff": Figure(
        f"{_SK08}/max_abs_diff_vs_skrebate",
        "{:.0e}",
        "largest |w - w_skrebate| over the estimators at N = 8,000",
    ),
    # ------------------------------------------------------------ GAMETES (bench_gametes)
    "gametes.murelief_detection": Figure(
        "gametes#overall/MuRelief/detection * 100",
        "{:.0f} %",
        "GAMETES files where MuRelief (k = 100) detects the interacting pair",
    ),
    "gametes.murelief_k10_detection": Figure(
        "'gametes#overall/MuRelief k=10/detection' * 100",
        "{:.0f} %",
        "GAMETES files where MuRelief with k = 10 detects the interacting pair",
    ),
    "gametes.murelief_skrebate_equal": Figure(
        f"{_MURELIEF_SK}/departures/steps/dmargin_order/files_within_1e-10",
        "{:.0f}",
        "files where skrebate's MuRelief, its three departures undone, equals dmargin's",
    ),
    "gametes.murelief_files": Figure(
        f"{_MURELIEF_SK}/files", "{:.0f}", "GAMETES files in the MuRelief comparison"
    ),
    "gametes.murelief_detection_differs": Figure(
        f"{_MURELIEF_SK}/files - {_MURELIEF_SK}/departures/steps/as_run/detection_agrees",
        "{:.0f}",
        "files where skrebate's MuRelief as run detects differently from dmargin's",
    ),
    # ------------------------------------------------------------ GWAS rows (bench_gwas)
    "gwas.rows_uint8_mib": Figure(
        "gwas#run/data_mib_uint8", "{:,.0f} MiB", "2,350 x 230,000 genotypes as bytes"
    ),
    "gwas.rows_float64_gib": Figure(
        "gwas#run/data_mib_as_float64 / 1024",
        "{:.1f} GiB",
        "2,350 x 230,000 genotypes as float64",
    ),
    "gwas.multisurf_fit_s": Figure(
        "gwas#run/fit_s", "{:.1f} s", "MultiSURF on 2,350 x 230,000 uint8 SNPs, 2 threads"
    ),
    "gwas.multisurf_peak_gib": Figure(
        "gwas#run/peak_rss_fit_mib / 1024",
        "{:.1f} GiB",
        "peak memory of MultiSURF on 2,350 x 230,000 uint8 SNPs",
    ),
    "gwas.vls_fit_s": Figure(
        "gwas/vls#run/fit_s", "{:.0f} s", "VLS, 460 subsets of 1,000 SNPs, on 2 threads"
    ),
    "gwas.vls_peak_gib": Figure(
        "gwas/vls#run/peak_rss_fit_mib / 1024", "{:.1f} GiB", "peak memory of the VLS fit"
    ),
    "gwas.vls_over_skrebate_uint8": Figure(
        f"{_GWAS_VLS_FITS}/library=dmargin&dtype=uint8/skrebate_over_this",
        "{:.0f}x",
        "skrebate's VLS time over dmargin's on uint8 rows, one thread",
    ),
    "gwas.vls_over_skrebate_float64": Figure(
        f"{_GWAS_VLS_FITS}/library=dmargin&dtype=float64/skrebate_over_this",
        "{:.0f}x",
        "skrebate's VLS time over dmargin's on float64 rows, one thread",
    ),
    "gwas.vls_diff_skrebate": Figure(
        f"{_GWAS_VLS_FITS}/library=dmargin&dtype=uint8/max_abs_diff_vs_skrebate",
        "{:.0e}",
        "largest difference of dmargin's uint8 VLS scores from skrebate's",
    ),
    # ------------------------------------------------------------ IMMIGRATE, LDM, SBS-MF
    "immigrate.r_max_abs_diff": Figure(
        "immigrate_speed#r_package/max_abs_w_difference",
        "{:.0e}",
        "largest difference of Immigrate's weight matrix from the R package's",
    ),
    "immigrate.over_r_breast_cancer": Figure(
        "immigrate_speed#targets/breast_cancer_over_r_1thr",
        "{:.0f}x",
        "the R package's Immigrate time over dmargin's on breast cancer, one thread",
    ),
    "immigrate.cost_50x5000_s": Figure(
        "immigrate_cost_rate#checks/estimate_50x5000_10_steps_s",
        "{:.0f} s",
        "fit_cost's estimate for plain Immigrate on 50 x 5,000",
    ),
    "ldm.rfe_808x100_s": Figure(
        _ref("ldm_rfe#whole_rfe/results/method=dmargin LDMRFE (rbf)/seconds"),
        "{:.0f} s",
        "kernel LDM-RFE on 808 x 100 down to one feature",
    ),
    "ldm.rfe_1e6_informative": Figure(
        "large/n1e6-ldm-rfe#runs/estimator=ldm_rfe_linear/informative_in_top10",
        "{:d}",
        "informative features linear LDM-RFE keeps among its top 10 on 10^6 rows",
    ),
    "sbsmf.fit_1e7_s": Figure(
        "large/n1e7-sbsmf#runs/n=10000000/fit_s",
        "{:.0f} s",
        "SBS-MF on 10^7 rows, 50 -> 10 features, step='halving', on the cluster",
    ),
    # ------------------------------------------------------------ Spark
    "spark.relieff_1e7_over_dask": Figure(
        f"{_SPARK_1E7}/ratio_spark_over_dask",
        "{:.1f}x",
        "ReliefF(n_anchors=1000) on 10^7 Parquet rows: Spark local[2] over a dask LocalCluster",
    ),
    "spark.relieff_1e7_read_share": Figure(
        f"{_SPARK_1E7}/spark_seconds_outside_waves / {_SPARK_1E7}/spark_fit_s * 100",
        "{:.0f} %",
        "share of Spark's fit spent on the read pass that caches the partitions",
    ),
}
