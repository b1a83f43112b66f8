"""read_logs on every real log file of the public corpus (../shared/corpus/logs)."""

from __future__ import annotations

import gzip
import struct
from pathlib import Path

import pandas as pd
import pytest

from toolkit.logs import read_logs

# file -> (dominant format, share of rows in it, rows with a parsed timestamp at least)
DOMINANT: dict[str, tuple[str, float, float]] = {
    "antmendoza__my-temporal-pocs__test.log": ("typescript_sdk", 1.0, 1.0),
    "fluent__fluent-bit__core_unescaping_json.log": ("json", 1.0, 1.0),
    "fluent__fluent-bit__dockermode_multiple_lines.log": ("text", 1.0, 0.0),
    "fluent__fluent-bit__multiline_001.log": ("json", 1.0, 1.0),
    "fluent__fluent-bit__test.log": ("text", 0.5, 0.0),
    "grafana__loki__drone-json.txt": ("logrus_json", 1.0, 1.0),
    "grafana__loki__flog.log": ("text", 1.0, 1.0),
    "grafana__loki__journald.txt": ("klog", 0.5, 0.7),
    "grafana__loki__kubernetes.txt": ("klog", 1.0, 1.0),
    "grafana__loki__vault.txt": ("hclog", 1.0, 1.0),
    "humanlogio__humanlog__input": ("slog_text", 0.75, 1.0),
    "humanlogio__humanlog__sample-structlog.log.gz": ("structlog_console", 1.0, 1.0),
    "humanlogio__humanlog__sample-zerolog-json.log.gz": ("zerolog", 1.0, 1.0),
    "temporalio__features__test.log": ("temporal_go_sdk", 1.0, 1.0),
    "temporalio__sdk-go__dev-server.log": ("slog_text", 0.9, 0.9),
    "temporalio__sdk-go__integration-test.log": ("go_test", 0.5, 0.25),
    "temporalio__sdk-php__Test_ContinueAsNew.log": ("temporal_go_sdk", 1.0, 1.0),
    "temporalio__temporal__alerts-input.log": ("text", 0.3, 0.0),
    "temporalio__temporal__timeout-input.log": ("text", 0.4, 0.3),
    "tstack__lnav__logfile_bunyan.0": ("bunyan", 1.0, 1.0),
    "tstack__lnav__logfile_docker_compose_with_ts.0": ("text", 1.0, 1.0),
    "tstack__lnav__logfile_glog.0": ("klog", 1.0, 1.0),
    "tstack__lnav__logfile_invalid_utf8.0": ("python", 1.0, 1.0),
    "tstack__lnav__logfile_java.0": ("log4j", 1.0, 1.0),
    "tstack__lnav__logfile_journald.json": ("text", 1.0, 1.0),
    "tstack__lnav__logfile_logfmt.0": ("logrus_text", 1.0, 1.0),
    "tstack__lnav__logfile_otel_collector.jsonl": ("otlp", 1.0, 1.0),
    "tstack__lnav__logfile_rust_tracing.0": ("rust_tracing_json", 1.0, 1.0),
    "tstack__lnav__logfile_vdsm.0": ("python", 1.0, 1.0),
    "tstack__lnav__logfile_zap_console.0": ("zap_console", 1.0, 1.0),
    "tstack__lnav__python-example.0": ("python", 1.0, 1.0),
    "vectordotdev__vector__multipart-zst.log": ("text", 1.0, 0.0),
    "vectordotdev__vector__utf-16le.log": ("text", 1.0, 0.0),
}


def input_lines(data: bytes) -> int:
    """Count input lines independently of the loader (gzip, UTF-16, Docker frames)."""
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    if data[:1] in (b"\x01", b"\x02") and data[1:4] == b"\x00\x00\x00":
        payload, pos = b"", 0
        while pos < len(data):
            size = struct.unpack(">I", data[pos + 4 : pos + 8])[0]
            payload += data[pos + 8 : pos + 8 + size]
            pos += 8 + size
        data = payload
    text = data.decode("utf-16") if data[:2] in (b"\xff\xfe", b"\xfe\xff") else data.decode(
        "utf-8", "replace")
    return text.count("\n") + (0 if text.endswith("\n") or not text else 1)


@pytest.fixture(scope="module")
def corpus_logs(corpus: Path) -> dict[str, pd.DataFrame]:
    return {p.name: read_logs(p) for p in sorted((corpus / "logs").iterdir())}


def test_every_corpus_file_is_covered(corpus: Path) -> None:
    assert sorted(p.name for p in (corpus / "logs").iterdir()) == sorted(DOMINANT)


@pytest.mark.parametrize("name", sorted(DOMINANT))
def test_corpus_file(name: str, corpus: Path, corpus_logs: dict[str, pd.DataFrame]) -> None:
    logs = corpus_logs[name]
    data = (corpus / "logs" / name).read_bytes()
    assert logs["lines"].sum() == input_lines(data), "every input line in exactly one row"
    firsts = logs.loc[logs["lines"] > 0, "line"]
    assert firsts.is_unique and firsts.is_monotonic_increasing
    fmt, share, with_ts = DOMINANT[name]
    assert (logs["format"] == fmt).mean() >= share
    assert logs["ts"].notna().mean() >= with_ts
    assert logs["parse_error"].isna().all()


def test_corpus_multiline_joins(corpus_logs: dict[str, pd.DataFrame]) -> None:
    python = corpus_logs["tstack__lnav__python-example.0"]
    assert list(python["lines"]) == [1, 2, 2, 1, 6]
    assert python.iloc[4]["message"].endswith("ZeroDivisionError: division by zero")
    assert python.iloc[0]["message"].endswith("\u03c0")  # non-ASCII kept

    zap = corpus_logs["tstack__lnav__logfile_zap_console.0"]
    assert list(zap["lines"]) == [1, 7, 1]
    assert zap.iloc[1]["fields"]["caller"] == "internal/queue_sender.go:128"

    timeout = corpus_logs["temporalio__temporal__timeout-input.log"]
    panics = timeout[timeout["format"] == "go_panic"]
    assert list(panics["lines"]) == [84, 61]
    assert "goroutine 53 [running]:" in panics.iloc[0]["message"]

    fluent = corpus_logs["fluent__fluent-bit__test.log"]
    java = fluent[fluent["format"] == "java_exception"].iloc[0]
    assert (java["lines"], java["ts"].month, java["ts"].day) == (6, 12, 14)
    go = fluent[fluent["format"] == "go_panic"].iloc[0]
    assert go["message"].count("goroutine ") == 4
    assert fluent.iloc[-1]["message"] == "one more line, no multiline"

    vdsm = corpus_logs["tstack__lnav__logfile_vdsm.0"]
    assert "libvirtError" in vdsm.iloc[1]["message"] and vdsm.iloc[1]["level"] == "error"

    race = corpus_logs["temporalio__temporal__alerts-input.log"]
    assert list(race.loc[race["format"] == "go_race", "lines"]) == [30, 39]

    invalid = corpus_logs["tstack__lnav__logfile_invalid_utf8.0"]
    assert invalid.iloc[0]["lines"] == 6 and "\ufffd" in invalid.iloc[0]["message"]
    assert "\r" not in invalid.iloc[0]["raw"]


def test_corpus_envelopes(corpus_logs: dict[str, pd.DataFrame]) -> None:
    flog = corpus_logs["grafana__loki__flog.log"]
    assert len(flog) == 1151 and set(flog["stream"]) == {"stdout"}
    assert flog.iloc[0]["ts"] == pd.Timestamp("2021-12-09T09:15:03.075785005Z")

    compose = corpus_logs["tstack__lnav__logfile_docker_compose_with_ts.0"]
    assert compose["container"].value_counts().to_dict() == {"redis-1": 12, "web-1": 10}
    assert not compose["message"].str.contains("\x1b").any()

    journald = corpus_logs["tstack__lnav__logfile_journald.json"]
    assert journald.iloc[0]["message"] == "GPS Reference longitude: 7.358143333"
    assert journald.iloc[0]["host"] == "imx6ul-medusa" and journald.iloc[0]["logger"] == "python"
    assert journald.iloc[0]["level"] == "critical"  # PRIORITY 1 (alert)

    docker = corpus_logs["fluent__fluent-bit__core_unescaping_json.log"]
    assert docker.iloc[0]["envelope"] == "docker-json" and docker.iloc[0]["stream"] == "stdout"
    assert docker.iloc[0]["fields"]["text"].startswith('quoted "text')


def test_corpus_timestamps_and_levels(corpus_logs: dict[str, pd.DataFrame]) -> None:
    zerolog = corpus_logs["humanlogio__humanlog__sample-zerolog-json.log.gz"]
    assert zerolog.iloc[0]["ts"] == pd.Timestamp("2024-11-12T05:17:27Z")  # +09:00
    dev = corpus_logs["temporalio__sdk-go__dev-server.log"]
    assert dev.iloc[0]["ts"] == pd.Timestamp("2026-08-19T03:04:22.576Z")  # -04:00
    assert (dev["level"] == "warning").sum() == 56
    otlp = corpus_logs["tstack__lnav__logfile_otel_collector.jsonl"]
    assert otlp.iloc[0]["ts"] == pd.Timestamp(1_700_000_000, unit="s", tz="UTC")
    bunyan = corpus_logs["tstack__lnav__logfile_bunyan.0"]
    assert set(bunyan["level"]) == {"debug", "info"}
    klog = corpus_logs["grafana__loki__journald.txt"]
    assert (klog.loc[klog["format"] == "klog", "ts"].dt.year == 2024).all()
    sdk = corpus_logs["temporalio__sdk-go__integration-test.log"]
    started = sdk[sdk["message"] == "Started Worker"].iloc[0]
    assert started["fields"]["Namespace"] == "integration-test-namespace"
