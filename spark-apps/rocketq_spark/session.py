"""One way to get a SparkSession with the rocketq sources registered, locally or under spark-submit.

Under ``spark-submit`` (a SparkApplication's driver is one) the master and every conf come from
the submission and are left alone. Run as a plain ``python`` program, the job starts Spark in
local mode (``local[*]`` unless ``--master`` says otherwise) with the Python workers on this
same interpreter, so a laptop needs nothing but ``pip install 'rocketq[analytics]'`` and Java 17.
"""

from __future__ import annotations

import os
import sys
from typing import Final

from pyspark.sql import SparkSession

from rocketq_spark.offsets_source import RocketMQOffsetsDataSource
from rocketq_spark.source import RocketMQDataSource

LOCAL_MASTER: Final = "local[*]"
LOCAL_CONF: Final = {
    "spark.ui.enabled": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.sql.session.timeZone": "UTC",
    "spark.ui.showConsoleProgress": "false",
    "spark.driver.extraJavaOptions": "-Dlog4j2.level=ERROR",
}


def under_spark_submit() -> bool:
    """spark-submit's Python runner hands the driver a gateway port; a plain ``python`` run has none."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def spark_session(app_name: str, master: str | None = None) -> SparkSession:
    builder = SparkSession.builder.appName(app_name)
    if master or not under_spark_submit():
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers need the same packages
        # Local mode talks to itself only: binding to loopback spares the "hostname resolves to a
        # loopback address" warning and any firewall prompt on a laptop.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.master(master or LOCAL_MASTER)
        for key, value in LOCAL_CONF.items():
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if master or not under_spark_submit():
        spark.sparkContext.setLogLevel("ERROR")  # a laptop run prints the report, not Spark's chatter
    register(spark)
    return spark


def register(spark: SparkSession) -> None:
    spark.dataSource.register(RocketMQDataSource)
    spark.dataSource.register(RocketMQOffsetsDataSource)
