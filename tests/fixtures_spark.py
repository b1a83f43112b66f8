"""One local Spark session for the whole test session (Java 17+ and pyspark; else skip)."""

from __future__ import annotations

import os
import shutil
import signal
import sys
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """``local[2]``, no UI, small shuffles; the JVM is stopped by its PID at the end."""
    pyspark = pytest.importorskip("pyspark", reason="pyspark not installed (the spark extra)")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("no Java runtime for Spark's local mode")
    from pyspark.sql import SparkSession

    # Python workers must be this interpreter (the one with the toolkit and its dependencies).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    warehouse = tmp_path_factory.mktemp("spark-warehouse")
    session = (
        SparkSession.builder.master("local[2]")
        .appName("toolkit-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.warehouse.dir", str(warehouse))
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    gateway = pyspark.SparkContext._gateway
    process = getattr(gateway, "proc", None)
    try:
        yield session
    finally:
        session.stop()
        if process is not None and process.poll() is None:
            os.kill(process.pid, signal.SIGTERM)
            process.wait(timeout=30)
