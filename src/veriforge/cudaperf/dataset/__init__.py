"""CudaPerf's generated dataset: task families, the verified build, export and splits."""
