// linkage.cpp - tessera's headers from C++: every declaration has C
// linkage, so this links against the C library as is.
#include <cstdio>

#include <tessera/tessera.h>

int main()
{
	ts_ctx *ctx = ts_ctx_new();
	const int64_t shape[2] = {16, 16};
	ts_tensor *A = ts_placeholder(ctx, "A", 2, shape, ts_float32);
	// a missing shape is an error, not a crash
	ts_tensor *bad = ts_placeholder(ctx, "B", 2, nullptr, ts_float32);
	std::printf("linkage: placeholder %s, error: %s\n", A ? A->name : "(none)",
		    bad ? "(none)" : ts_last_error(ctx));
	ts_ctx_free(ctx);
	return A && !bad ? 0 : 1;
}
