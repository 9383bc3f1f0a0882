"""The smaller command lines under a user's everyday mistakes: one line on stderr, exit code 2, no traceback."""

import pytest

from attnconv.train import bow


def test_bow_names_a_corpus_folder_without_the_zips(tmp_path, capsys):
    empty = tmp_path / "empty"
    empty.mkdir()
    for root, needle in ((empty, "is missing"), (tmp_path / "nope", "no corpus folder")):
        assert bow.main(["--out", str(tmp_path / "out"), "--root", str(root)]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and "Traceback" not in err, err
        assert err.startswith(f"python -m attnconv.train.bow: --root {root}: ") and needle in err, err
    assert not (tmp_path / "out" / "final.json").exists()


@pytest.mark.parametrize("value", ["0", "9", "-5", "many"])
def test_bow_refuses_a_subset_too_small_to_choose_the_penalty(value, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        bow.main(["--out", str(tmp_path / "out"), "--train-examples", value])
    assert caught.value.code == 2
    assert f"--train-examples: must be an integer of at least 10, got '{value}'" in capsys.readouterr().err
