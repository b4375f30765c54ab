"""korovod.spark.torch: Horovod's Torch estimator for Spark is not part of korovod yet."""

raise ImportError("korovod.spark.torch (Horovod's TorchEstimator) does not exist in korovod yet: use korovod.spark.run "
                  "with a training function (docs/spark.md)")
