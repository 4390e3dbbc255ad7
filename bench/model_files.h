/*
 * model_files.h - the model files of scripts/onnx_models.py, shared by
 * `tessera-bench model` and tests/test_models.c: finding the Python
 * environment (scripts/python-env.sh makes it), making a model with its
 * input and ONNX Runtime's output when they are missing, reading the raw
 * float32 files, and timing ONNX Runtime.
 *
 * Every function returns 0 on success, or -1 with a message in err.
 */
#ifndef TESSERA_BENCH_MODEL_FILES_H
#define TESSERA_BENCH_MODEL_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The interpreter: $TESSERA_PYTHON, else $TESSERA_VENV/bin/python, else
 * SRC/.venv/bin/python; it must import onnx and onnxruntime. */
int mf_python(const char *src, char *buf, size_t n, char *err, size_t errn);

/* DIR/NAME.onnx, DIR/NAME.input.bin, DIR/NAME.ort.bin for model
 * ("resnet50", "bert-layer"; NAME gets "-small" when small), made with
 * onnx_models.py when one is missing.  base gets DIR/NAME. */
int mf_make(const char *src, const char *model, bool small, const char *dir, char *base,
	    size_t n, char *err, size_t errn);

/* Reads exactly count floats from path into out. */
int mf_read_floats(const char *path, float *out, int64_t count, char *err, size_t errn);

/* ONNX Runtime's median time of one inference (ms) on `threads` threads,
 * timed for at least min_seconds (and 20 runs) after 5 warm-up runs. */
int mf_ort_time(const char *src, const char *onnx, const char *input, int threads, double min_seconds,
		double *median_ms, char *err, size_t errn);

/* max |a - ref| / max |ref| (max |a - ref| when ref is all zeros); NaN
 * anywhere gives infinity. */
double mf_rel_err(const float *a, const float *ref, int64_t n);

#endif
