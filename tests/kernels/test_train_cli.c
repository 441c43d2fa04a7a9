/* `rdmaps train` flag handling: unknown flags and bad values exit 2; a
 * missing data directory is a runtime failure (exit 1). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>

#include "kernels/train.h"

static int run(int argc, const char *const *argv)
{
	return rdm_train_main(argc, (char **)argv);
}

#define RUN(...)                                                        \
	({                                                              \
		const char *const a_[] = { "train", __VA_ARGS__ };      \
		run((int)(sizeof(a_) / sizeof(a_[0])), a_);             \
	})

static void test_bad_flags(void **st)
{
	(void)st;
	/* each a bad flag or value (one argument, or a flag and its value) */
	static const char *const bad[][2] = {
		{ "--bogus" }, { "--model=cnn" }, { "--model", "rnn" },
		{ "--epochs=x" }, { "--epochs=-1" }, { "--batch_size=0" },
		{ "--learning_rate=abc" }, { "--learning_rate=-0.1" }, { "--threads=0" },
		{ "--hidden_units=1x" }, { "--seed=-3" }, { "--optimizer=rmsprop" },
		{ "--loss=max" }, { "--learning_rate" }, { "stray" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		const char *argv[] = { "train", bad[i][0], bad[i][1] };
		int rc = run(bad[i][1] ? 3 : 2, argv);
		if (rc != 2)
			fail_msg("train %s %s: exit %d, want 2", bad[i][0],
				 bad[i][1] ? bad[i][1] : "", rc);
	}
	assert_int_equal(RUN("--help"), 0);
}

static void test_missing_data(void **st)
{
	(void)st;
	assert_int_equal(RUN("--model=mlp", "--data_dir=/nonexistent/rdmaps", "--epochs=1",
			     "--quiet"), 1);
}

static void test_defaults(void **st)
{
	(void)st;
	struct rdm_train_opts o;
	rdm_train_opts_defaults(&o, RDM_MODEL_MLP);
	assert_int_equal(o.batch_size, 100);
	assert_float_equal(o.learning_rate, 0.01f, 0);
	assert_int_equal(o.loss_mean, 0);
	assert_int_equal(o.optimizer, RDM_OPT_ADAM);
	rdm_train_opts_defaults(&o, RDM_MODEL_LSTM);
	assert_int_equal(o.batch_size, 128);
	assert_float_equal(o.learning_rate, 0.001f, 0);
}

int main(void)
{
	const struct CMUnitTest t[] = {
		cmocka_unit_test(test_bad_flags),
		cmocka_unit_test(test_missing_data),
		cmocka_unit_test(test_defaults),
	};
	return cmocka_run_group_tests(t, NULL, NULL);
}
