/*
 * report.c - tessera-bench's outputs: the table on stdout, the JSON records
 * and a gnuplot bar chart of GFLOP/s.
 *
 * Ratios compare each row with the baselines of the same problem as
 * GFLOP/s(row) / GFLOP/s(baseline): above 1 the row is faster.  The chart
 * is drawn by the gnuplot program (through a pipe) from a data file written
 * next to the PNG, so the numbers behind a chart can always be re-plotted.
 *
 * A ratio is only as good as its two timings.  A row whose samples were
 * flagged (ts_timing_verdict: noisy, outliers, bimodal, quantized, too
 * few, not stable) has its median marked with '!', every ratio it takes
 * part in is marked with '!', a warning under the table says why, and the
 * geometric means of the headline leave those problems out and say how
 * many.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bench.h"

static const bench_impl baselines[] = {BENCH_IMPL_OPENBLAS, BENCH_IMPL_ONEDNN,
				       BENCH_IMPL_CUBLAS, BENCH_IMPL_CUDNN};

static const char *status_name(bench_status s)
{
	return s == BENCH_ROW_OK ? "ok" : s == BENCH_ROW_FAILED ? "FAILED" : "skipped";
}

/* The timed row of impl on problem p in r, or NULL. */
static const bench_result *row_of(const bench_result *r, int n, const bench_problem *p,
				  bench_impl impl)
{
	for (int i = 0; i < n; i++)
		if (r[i].p == p && r[i].impl == impl && r[i].status == BENCH_ROW_OK)
			return &r[i];
	return NULL;
}

/* The GFLOP/s of impl on problem p in r, or NaN. */
static double gflops_of(const bench_result *r, int n, const bench_problem *p, bench_impl impl)
{
	const bench_result *row = row_of(r, n, p, impl);
	return row ? row->gflops : NAN;
}

static bool flagged(const bench_result *r)
{
	return r && r->status == BENCH_ROW_OK && r->flags != 0;
}

/* Which baselines have at least one timed row (the table's ratio columns). */
static int used_baselines(const bench_result *r, int n, bench_impl *out)
{
	int k = 0;
	for (size_t b = 0; b < TS_COUNT_OF(baselines); b++) {
		for (int i = 0; i < n; i++) {
			if (r[i].impl == baselines[b] && r[i].status == BENCH_ROW_OK) {
				out[k++] = baselines[b];
				break;
			}
		}
	}
	return k;
}

static void print_num(FILE *f, int width, const char *fmt, double v)
{
	if (isnan(v) || v < 0)
		fprintf(f, " %*s", width, "-");
	else
		fprintf(f, fmt, width, v);
}

/* " 12.345!" / " 12.345 ": a number then a mark, or "-" aligned with it. */
void bench_print_marked(FILE *f, int width, const char *fmt, double v, bool mark)
{
	char num[64];
	if (isnan(v) || v < 0) {
		fprintf(f, " %*s ", width + (fmt[strlen(fmt) - 1] == 'x'), "-");
		return;
	}
	snprintf(num, sizeof num, fmt, width, v);
	fprintf(f, " %s%c", num, mark ? '!' : ' ');
}

static void print_header(FILE *f, const bench_impl *base, int nb)
{
	fprintf(f, "%-26s %-28s %-9s %3s %10s %9s %5s %9s %6s", "problem", "shape", "impl", "thr",
		"median ms", "min ms", "sd%", "GFLOP/s", "%peak");
	for (int b = 0; b < nb; b++)
		fprintf(f, " %10s", bench_impl_names[base[b]]);
	fprintf(f, " %10s  %s\n", "compile ms", "status");
}

static void print_row(FILE *f, const bench_result *all, int n, const bench_result *r,
		      const bench_impl *base, int nb)
{
	char shape[64];
	fprintf(f, "%-26s %-28s %-9s %3d", r->p->name, bench_shape_str(r->p, shape, sizeof shape),
		bench_impl_names[r->impl], r->threads);
	bench_print_marked(f, 9, "%*.3f", r->median_ms, flagged(r));
	print_num(f, 9, " %*.3f", r->min_ms);
	double sd = 100 * r->stddev_ms / r->median_ms;
	print_num(f, 5, sd < 99.95 ? " %*.1f" : " %*.0f", sd);
	print_num(f, 9, " %*.1f", r->gflops);
	print_num(f, 6, " %*.1f", r->pct_peak);
	for (int b = 0; b < nb; b++) {
		const bench_result *base_row = row_of(all, n, r->p, base[b]);
		double ratio = base_row ? r->gflops / base_row->gflops : NAN;
		bench_print_marked(f, 8, "%*.2fx", ratio, flagged(r) || flagged(base_row));
	}
	print_num(f, 10, " %*.1f", r->compile_ms);
	fprintf(f, "  %s%s%s\n", status_name(r->status), r->status == BENCH_ROW_OK ? "" : ": ",
		r->status == BENCH_ROW_OK ? "" : r->note);
}

void bench_warn_timing(FILE *f, const char *impl, const char *op, const char *problem,
		       const ts_timing *tm)
{
	char why[256];
	if (tm->flags)
		fprintf(f, "warning: %s %s %s: %s: ratio not reliable\n", impl, op, problem,
			ts_timing_verdict(tm, why, sizeof why));
}

/* One line per flagged row: what, where and why. */
static int print_warnings(FILE *f, const bench_result *r, int n, int nb)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		if (!flagged(&r[i]))
			continue;
		fprintf(f, "warning: %s %s %s: %s: %s\n", bench_impl_names[r[i].impl],
			bench_op_name(r[i].p->op), r[i].p->name, r[i].verdict,
			nb ? "ratio not reliable" : "time not reliable");
		k++;
	}
	return k;
}

static const char *plural(int k, const char *one, const char *many)
{
	return k == 1 ? one : many;
}

/* The headline of one baseline: the geometric mean of tessera / baseline
 * over the problems where both ran and neither is flagged. */
static void print_geomean(FILE *f, const bench_result *r, int n, bench_impl base)
{
	double logs = 0;
	int used = 0, left = 0;
	for (int i = 0; i < n; i++) {
		if (r[i].impl != BENCH_IMPL_TESSERA || r[i].status != BENCH_ROW_OK)
			continue;
		const bench_result *b = row_of(r, n, r[i].p, base);
		if (!b)
			continue;
		if (flagged(&r[i]) || flagged(b)) {
			left++;
			continue;
		}
		logs += log(r[i].gflops / b->gflops);
		used++;
	}
	if (used + left == 0)
		return;
	fprintf(f, "geomean tessera / %s: ", bench_impl_names[base]);
	if (used)
		fprintf(f, "%.2fx over %d %s", exp(logs / used), used,
			plural(used, "problem", "problems"));
	else
		fprintf(f, "not reliable");
	if (left)
		fprintf(f, " (%d flagged %s left out)\n", left, plural(left, "problem", "problems"));
	else
		fprintf(f, " (none flagged)\n");
}

void bench_print_table(FILE *f, const bench_result *r, int n)
{
	bench_impl base[TS_COUNT_OF(baselines)];
	int nb = used_baselines(r, n, base);
	print_header(f, base, nb);
	for (int i = 0; i < n; i++)
		print_row(f, r, n, &r[i], base, nb);
	if (nb)
		fprintf(f, "(baseline columns: GFLOP/s of the row / GFLOP/s of that library)\n");
	if (print_warnings(f, r, n, nb))
		fprintf(f, "(!: timings flagged, see the warnings; sd%%: stddev / median)\n");
	for (int b = 0; b < nb; b++)
		print_geomean(f, r, n, base[b]);
}

/* ---- JSON ------------------------------------------------------------------------ */

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_num(FILE *f, double v)
{
	if (isfinite(v) && v >= 0)
		fprintf(f, "%.6g", v);
	else
		fputs("null", f);
}

/* The samples' quality: percentiles, warm-up, the flags by name, the
 * verdict, and whether the row's ratios can be trusted. */
static void json_quality(FILE *f, const bench_result *r)
{
	static const struct { unsigned bit; const char *name; } names[] = {
		{TS_TIMING_FEW, "few"}, {TS_TIMING_NOISY, "noisy"},
		{TS_TIMING_OUTLIERS, "outliers"}, {TS_TIMING_BIMODAL, "bimodal"},
		{TS_TIMING_QUANTIZED, "quantized"}, {TS_TIMING_UNSTABLE, "unstable"}};
	fputs(", \"p10_ms\": ", f);
	json_num(f, r->p10_ms);
	fputs(", \"p90_ms\": ", f);
	json_num(f, r->p90_ms);
	fprintf(f, ", \"warmups\": %d, \"flags\": [", r->warmups);
	for (size_t i = 0, k = 0; i < TS_COUNT_OF(names); i++)
		if (r->flags & names[i].bit)
			fprintf(f, "%s\"%s\"", k++ ? ", " : "", names[i].name);
	fputs("], \"verdict\": ", f);
	json_str(f, r->verdict);
	fprintf(f, ", \"reliable\": %s", r->status == BENCH_ROW_OK && !r->flags ? "true" : "false");
}

static void json_record(FILE *f, const bench_result *r)
{
	char shape[64];
	fputs("  {\"op\": ", f);
	json_str(f, bench_op_name(r->p->op));
	fputs(", \"name\": ", f);
	json_str(f, r->p->name);
	fputs(", \"shape\": ", f);
	json_str(f, bench_shape_str(r->p, shape, sizeof shape));
	fputs(", \"dtype\": ", f);
	json_str(f, bench_dtype_name(r->p->dtype));
	fputs(", \"impl\": ", f);
	json_str(f, bench_impl_names[r->impl]);
	fprintf(f, ", \"threads\": %d, \"target\": ", r->threads);
	json_str(f, r->target == BENCH_CPU ? "cpu" : "cuda");
	fputs(", \"median_ms\": ", f);
	json_num(f, r->median_ms);
	fputs(", \"min_ms\": ", f);
	json_num(f, r->min_ms);
	fputs(", \"mean_ms\": ", f);
	json_num(f, r->mean_ms);
	fputs(", \"stddev_ms\": ", f);
	json_num(f, r->stddev_ms);
	fprintf(f, ", \"samples\": %d, \"flush_l2\": %s", r->samples,
		r->flush_l2 ? "true" : "false");
	fputs(", \"gflops\": ", f);
	json_num(f, r->gflops);
	fputs(", \"compile_ms\": ", f);
	json_num(f, r->compile_ms);
	fputs(", \"pct_peak\": ", f);
	json_num(f, r->pct_peak);
	fputs(", \"max_rel_err\": ", f);
	json_num(f, r->max_rel_err);
	fputs(", \"status\": ", f);
	json_str(f, status_name(r->status));
	fputs(", \"note\": ", f);
	json_str(f, r->note);
	json_quality(f, r);
	fputc('}', f);
}

int bench_write_json(const char *path, const bench_result *r, int n)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fputs("[\n", f);
	for (int i = 0; i < n; i++) {
		json_record(f, &r[i]);
		fputs(i + 1 < n ? ",\n" : "\n", f);
	}
	fputs("]\n", f);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

/* ---- chart -------------------------------------------------------------------------- */

/* PATH.png -> PATH.dat (anything else: PATH + ".dat"). */
static void data_path(const char *png, char *out, size_t n)
{
	size_t len = strlen(png);
	if (len > 4 && strcmp(png + len - 4, ".png") == 0)
		len -= 4;
	snprintf(out, n, "%.*s.dat", (int)len, png);
}

/* Rows: problems; columns: the implementations with a timed row. */
static int write_data(const char *path, const bench_result *r, int n, bench_impl *cols,
		      int *ncols)
{
	*ncols = 0;
	for (int i = 0; i < BENCH_NIMPL; i++)
		for (int j = 0; j < n; j++)
			if (r[j].impl == (bench_impl)i && r[j].status == BENCH_ROW_OK) {
				cols[(*ncols)++] = (bench_impl)i;
				break;
			}
	FILE *f = fopen(path, "w");
	if (!f)
		return perror(path), -1;
	fputs("problem", f);
	for (int c = 0; c < *ncols; c++)
		fprintf(f, " %s", bench_impl_names[cols[c]]);
	fputc('\n', f);
	for (int i = 0; i < n; i++) {
		if (i > 0 && r[i - 1].p == r[i].p)
			continue;
		fprintf(f, "%s", r[i].p->name);
		for (int c = 0; c < *ncols; c++) {
			double g = gflops_of(r, n, r[i].p, cols[c]);
			isnan(g) ? fputs(" ?", f) : fprintf(f, " %.3f", g);
		}
		fputc('\n', f);
	}
	return fclose(f) ? (perror(path), -1) : 0;
}

static int run_gnuplot(const char *png, const char *dat, int ncols)
{
	FILE *g = popen("gnuplot", "w");
	if (!g)
		return perror("gnuplot"), -1;
	fprintf(g, "set terminal pngcairo size 1400,640 noenhanced\n"
		   "set output '%s'\n"
		   "set datafile missing '?'\n"
		   "set style data histograms\n"
		   "set style histogram clustered gap 1\n"
		   "set style fill solid 0.85 border -1\n"
		   "set key outside right top\n"
		   "set grid ytics\n"
		   "set xtics rotate by -35 left\n"
		   "set ylabel 'GFLOP/s'\n"
		   "set title 'tessera-bench: GFLOP/s per problem (higher is better)'\n"
		   "plot for [i=2:%d] '%s' using i:xtic(1) title columnheader(i)\n",
		png, ncols + 1, dat);
	int rc = pclose(g);
	if (rc != 0) {
		fprintf(stderr, "tessera-bench: gnuplot failed (status %d); chart not written\n", rc);
		return -1;
	}
	return 0;
}

int bench_write_plot(const char *path, const bench_result *r, int n)
{
	if (system("command -v gnuplot >/dev/null 2>&1") != 0) {
		fprintf(stderr, "tessera-bench: gnuplot is not installed; skipping the chart %s "
				"(install gnuplot-nox)\n", path);
		return 1;
	}
	if (strchr(path, '\'')) {
		fprintf(stderr, "tessera-bench: --plot: a quote in '%s' is not supported\n", path);
		return -1;
	}
	char dat[4096];
	data_path(path, dat, sizeof dat);
	bench_impl cols[BENCH_NIMPL];
	int ncols;
	if (write_data(dat, r, n, cols, &ncols))
		return -1;
	if (ncols == 0) {
		fprintf(stderr, "tessera-bench: no timed results; chart not written\n");
		return -1;
	}
	if (run_gnuplot(path, dat, ncols))
		return -1;
	/* gnuplot exits 0 even when it could not write (a full device): the
	 * chart must be a non-empty file */
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0) {
		fprintf(stderr, "tessera-bench: --plot: the chart %s was not written\n", path);
		return -1;
	}
	return 0;
}
