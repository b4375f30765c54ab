"""korovod.spark.keras: Horovod's Keras estimator for Spark is not part of korovod yet."""

raise ImportError("korovod.spark.keras (Horovod's KerasEstimator) does not exist in korovod yet: use korovod.spark.run "
                  "with a training function (docs/spark.md)")
