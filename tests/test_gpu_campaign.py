"""benchmarks/gpu_campaign.sh --dry-run: the campaign's steps at tiny sizes on the CPU, with the record layout a
GPU run writes; and the data packing it carries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from attnconv.data.sample_text import write_sample_corpora

from .cifar_fixtures import tiny_arrays, write_class_zip

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import pack_data  # noqa: E402


@pytest.fixture(scope="module")
def packed(tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    arrays = tiny_arrays(80, 40)
    for split in ("train", "test"):
        write_class_zip(data / "cifar10-jpeg" / f"{split}.zip", arrays, splits=(split,))
    write_sample_corpora(data / "nltk" / "corpora", sentences_per_file=30)
    archive = data.parent / "campaign-data.tar.gz"
    manifest = pack_data.pack(data, archive)
    return archive, manifest


def test_the_pack_holds_the_data_and_its_manifest(packed, tmp_path):
    archive, manifest = packed
    assert "cifar10-jpeg/train.zip" in manifest and "nltk/corpora/brown.zip" in manifest
    with tarfile.open(archive) as tar:
        tar.extractall(tmp_path)
    pack_data.check(tmp_path)
    with zipfile.ZipFile(tmp_path / "cifar10-jpeg" / "test.zip", "a") as zf:
        zf.writestr("test/cat/extra.jpg", b"changed")
    with pytest.raises(RuntimeError, match="differs from the packed copy"):
        pack_data.check(tmp_path)
    with pytest.raises(FileNotFoundError, match="lacks cifar10-jpeg/train.zip"):
        pack_data.pack(tmp_path / "nltk", tmp_path / "x.tar.gz")


def test_dry_run_writes_the_campaign_layout(packed, tmp_path):
    archive, _ = packed
    env = {k: v for k, v in os.environ.items() if k not in ("ATTNCONV_DATA", "ATTNCONV_CACHE")}
    env["PYTHON"] = sys.executable
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_campaign.sh"), "--data", str(archive),
                           "--out", str(tmp_path / "out"), "--dry-run"], env=env, capture_output=True, text=True,
                          timeout=900)
    out = tmp_path / "out"
    logs = {p.name: p.read_text()[-2000:] for p in (out / "logs").glob("*.log")}
    assert done.returncode == 0, (done.stdout, done.stderr, logs)
    campaign = json.loads((out / "campaign.json").read_text())
    assert campaign["dry_run"] is True and campaign["ok"] is True
    for key in ("device", "torch", "python", "commit", "dirty", "wall_time_s", "start", "end"):
        assert key in campaign, key
    assert [s["step"] for s in campaign["steps"]] == ["vision-sa-quadratic", "vision-resnet18", "bert-pretrain",
                                                       "bert-finetune-mr"]
    for name, run in campaign["runs"].items():
        assert run["final"] is not None and run["device"].startswith("CPU"), name
        for record in ("final.json", "provenance.json", "metrics.jsonl"):
            assert (out / name / record).is_file(), (name, record)
    vision = json.loads((out / "vision-sa-quadratic" / "provenance.json").read_text())
    assert vision["config"]["name"] == "gpu-10min" and vision["config"]["model"] == "sa-quadratic"
    assert (out / "vision-sa-quadratic" / "centers.jsonl").is_file()
    assert campaign["runs"]["bert-finetune-mr"]["final"]["task"] == "mr"


def test_bad_arguments_are_refused(tmp_path):
    done = subprocess.run(["bash", str(ROOT / "benchmarks" / "gpu_campaign.sh"), "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert done.returncode == 2 and "--data must name the packed archive" in done.stderr
