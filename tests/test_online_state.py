"""Online I-RELIEF's state on disk: an interrupted stream resumes to the identical result."""

import numpy as np
import pandas as pd
import pytest

from dmargin import OnlineIRelief


def _stream(seed=0, n=400, labels=("no", "yes")):
    rng = np.random.default_rng(seed)
    y = np.asarray(labels)[rng.integers(0, 2, n)]
    X = rng.normal(size=(n, 5))
    X[:, 1] += 2.0 * (y == labels[1])
    return X, y


@pytest.mark.parametrize("reference_size", [None, 40])
@pytest.mark.parametrize("scale", ["minmax", None])
def test_resumed_stream_equals_uninterrupted(tmp_path, reference_size, scale):
    X, y = _stream()
    chunks = [slice(i, i + 100) for i in range(0, 400, 100)]
    params = dict(reference_size=reference_size, scale=scale, random_state=3, a=1.0)
    whole = OnlineIRelief(**params)
    for c in chunks:
        whole.partial_fit(X[c], y[c], classes=["no", "yes"])

    first = OnlineIRelief(**params)
    for c in chunks[:2]:
        first.partial_fit(X[c], y[c], classes=["no", "yes"])
    first.save_state(tmp_path / "state.npz")
    resumed = OnlineIRelief.load_state(tmp_path / "state.npz")
    for c in chunks[2:]:
        resumed.partial_fit(X[c], y[c])

    np.testing.assert_array_equal(resumed.feature_importances_, whole.feature_importances_)
    np.testing.assert_array_equal(resumed.nu_, whole.nu_)
    assert resumed.n_steps_ == whole.n_steps_ == 400
    assert resumed.get_params() == whole.get_params()
    np.testing.assert_array_equal(resumed.classes_, whole.classes_)


def test_state_keeps_feature_names_and_numeric_labels(tmp_path):
    X, y = _stream(labels=(3, 7))
    frame = pd.DataFrame(X, columns=list("abcde"))
    est = OnlineIRelief(random_state=0).partial_fit(frame[:200], y[:200])
    est.save_state(tmp_path / "s.npz")
    back = OnlineIRelief.load_state(tmp_path / "s.npz")
    assert list(back.feature_names_in_) == list("abcde")
    assert back.classes_.dtype.kind == "i"
    est.partial_fit(frame[200:], y[200:])
    back.partial_fit(frame[200:], y[200:])
    np.testing.assert_array_equal(back.feature_importances_, est.feature_importances_)


def test_state_file_is_plain_npz_without_pickle(tmp_path):
    X, y = _stream()
    OnlineIRelief(random_state=np.random.default_rng(5)).partial_fit(X, y).save_state(
        tmp_path / "s.npz"
    )
    with np.load(tmp_path / "s.npz", allow_pickle=False) as f:
        assert {"header", "nu", "w", "classes"} <= set(f.files)


def test_load_state_rejects_other_files(tmp_path):
    np.savez(tmp_path / "other.npz", header=np.array('{"format": "something else"}'))
    with pytest.raises(ValueError, match="not an OnlineIRelief state file"):
        OnlineIRelief.load_state(tmp_path / "other.npz")


def test_save_state_before_any_fit_is_an_error(tmp_path):
    from sklearn.exceptions import NotFittedError

    with pytest.raises(NotFittedError):
        OnlineIRelief().save_state(tmp_path / "s.npz")


def test_a_stream_may_end_with_a_one_row_chunk():
    X, y = _stream()
    est = OnlineIRelief(random_state=0, reference_size=None).partial_fit(X[:399], y[:399])
    est.partial_fit(X[399:], y[399:])
    assert est.n_steps_ == 400
    with pytest.raises(ValueError, match="minimum of 2"):
        OnlineIRelief().partial_fit(X[:1], y[:1])


def test_first_chunk_with_one_class_gives_finite_relieff_weights():
    """``classes=`` lists two labels, the first chunk holds one: the miss priors of
    that class are uniform over the others, not 0/0, and the weights stay finite."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4))
    y = np.repeat([0, 1], 30)
    X[:, 0] += 2 * y
    est = OnlineIRelief(multiclass="relieff", random_state=0)
    est.partial_fit(X[:30], y[:30], classes=[0, 1])
    est.partial_fit(X[30:], y[30:])
    # _miss_prior is the private state the 0/0 would have poisoned
    assert np.all(np.isfinite(est._miss_prior)) and np.all(np.isfinite(est.nu_))
    assert np.all(np.isfinite(est.feature_importances_))
