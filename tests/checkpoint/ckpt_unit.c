/* Checkpoint unit tests (cmocka).  argv[1] selects one test (ctest runs each
 * by name); without an argument all run. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <zlib.h>

#include "common/status.h"
#include "ps/checkpoint.h"

#define NF 1000
#define SH 0x57a7e5ull /* this job's state hash (model, floats, placement) */

static char tdir[256];

/* Linked with --wrap=fsync: while dir_fsync_errno is set, the fsync of a
 * directory fails with it, as on a filesystem without fsync for
 * directories (EINVAL) or with a failing disk (EIO).  Files sync as usual. */
static int dir_fsync_errno, dir_fsyncs;
int __real_fsync(int fd);
int __wrap_fsync(int fd)
{
	struct stat st;
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		dir_fsyncs++;
		if (dir_fsync_errno) {
			errno = dir_fsync_errno;
			return -1;
		}
	}
	return __real_fsync(fd);
}

static int setup(void **state)
{
	(void)state;
	snprintf(tdir, sizeof(tdir), "%s/ckpt_unit.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	return mkdtemp(tdir) ? 0 : -1;
}

static int teardown(void **state)
{
	(void)state;
	DIR *d = opendir(tdir);
	struct dirent *de;
	char p[600];
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", tdir, de->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	chmod(tdir, 0700);
	rmdir(tdir);
	return 0;
}

static struct rdmaps_ckpt_meta mk(uint64_t step)
{
	struct rdmaps_ckpt_meta md = { .shard = 1, .nshards = 2, .layout_hash = 0xabcdef1234ull,
				       .global_step = step, .beta1_power = 0.9, .beta2_power = 0.999,
				       .nfloats = NF, .state_hash = SH };
	return md;
}

static void fill(float *p, float base)
{
	for (int i = 0; i < NF; i++)
		p[i] = base + (float)i * 0.5f;
}

/* Save md with the sections of its step (params from step, m from step +
 * 1000, v from step + 2000: what restore() checks); the save's status. */
static int save_meta(const struct rdmaps_ckpt_meta *md, int keep)
{
	float p[NF], m[NF], v[NF];
	fill(p, (float)md->global_step);
	fill(m, (float)md->global_step + 1000);
	fill(v, (float)md->global_step + 2000);
	return rdmaps_ckpt_save(tdir, md, p, m, v, keep);
}

static void save_step(uint64_t step, int keep)
{
	struct rdmaps_ckpt_meta md = mk(step);
	assert_int_equal(save_meta(&md, keep), RDMAPS_OK);
}

static int restore(uint64_t *step, float *p)
{
	struct rdmaps_ckpt_meta md;
	float m[NF], v[NF];
	char path[600];
	int rc = rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &md, p, m, v, path, sizeof(path));
	if (rc == RDMAPS_OK) {
		*step = md.global_step;
		assert_int_equal(md.nfloats, NF);
		assert_true(md.beta1_power == 0.9 && md.beta2_power == 0.999);
		assert_true(m[3] == (float)md.global_step + 1000 + 1.5f);
		assert_true(v[5] == (float)md.global_step + 2000 + 2.5f);
		assert_non_null(strstr(path, "shard-1-step-"));
	}
	return rc;
}

/* the newest valid checkpoint restores (its parameters into p), at step want */
static void expect_restored(uint64_t want, float *p)
{
	uint64_t s = 0;
	assert_int_equal(restore(&s, p), RDMAPS_OK);
	assert_int_equal(s, want);
}

static char *ckpt_path(uint64_t step)
{
	static char p[600];
	snprintf(p, sizeof(p), "%s/shard-1-step-%llu.ckpt", tdir, (unsigned long long)step);
	return p;
}

static int count_files(void)
{
	int n = 0;
	DIR *d = opendir(tdir);
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

static void t_roundtrip(void **state)
{
	(void)state;
	save_step(42, 5);
	float p[NF];
	expect_restored(42, p);
	for (int i = 0; i < NF; i++)
		assert_true(p[i] == 42 + (float)i * 0.5f);
}

static void t_no_slots(void **state)
{
	(void)state;
	float p[NF], m[NF], v[NF];
	fill(p, 7);
	struct rdmaps_ckpt_meta md = mk(7), out;
	assert_int_equal(rdmaps_ckpt_save(tdir, &md, p, NULL, NULL, 5), RDMAPS_OK);
	memset(m, 0xff, sizeof(m));
	memset(v, 0xff, sizeof(v));
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, md.layout_hash, SH, NF, &out, p, m, v, NULL, 0), RDMAPS_OK);
	assert_true(m[10] == 0.0f && v[NF - 1] == 0.0f && p[2] == 8.0f);
}

static void t_prune(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 8; s++)
		save_step(s * 100, 3);
	assert_int_equal(count_files(), 3);
	assert_int_equal(access(ckpt_path(800), F_OK), 0);
	assert_int_equal(access(ckpt_path(600), F_OK), 0);
	assert_int_not_equal(access(ckpt_path(500), F_OK), 0);
	/* step 1000 sorts after 800 numerically, not lexically */
	save_step(1000, 3);
	assert_int_not_equal(access(ckpt_path(600), F_OK), 0);
	assert_int_equal(access(ckpt_path(1000), F_OK), 0);
}

/* Files of higher steps (another run's) are not counted or pruned: a
 * lower-step save is kept, and pruning works among steps <= it. */
static void t_prune_higher(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 4; s++)
		save_step(1000 + s, 2);
	save_step(5, 2);
	assert_int_equal(access(ckpt_path(5), F_OK), 0);
	save_step(6, 2);
	save_step(7, 2);
	assert_int_not_equal(access(ckpt_path(5), F_OK), 0);
	assert_int_equal(access(ckpt_path(6), F_OK), 0);
	assert_int_equal(access(ckpt_path(7), F_OK), 0);
	/* the higher ones: the two of the first run's own pruning remain */
	assert_int_equal(access(ckpt_path(1004), F_OK), 0);
	assert_int_equal(access(ckpt_path(1003), F_OK), 0);
	assert_int_equal(count_files(), 4);
}

/* checkpoints of steps 10 and 20 saved (keep 5); returns the newest's size */
static long save_10_and_20(void)
{
	struct stat st;

	save_step(10, 5);
	save_step(20, 5);
	assert_int_equal(stat(ckpt_path(20), &st), 0);
	return (long)st.st_size;
}

static void flip(const char *path, long off)
{
	FILE *f = fopen(path, "r+b");
	assert_non_null(f);
	fseek(f, off, SEEK_SET);
	int c = fgetc(f);
	fseek(f, off, SEEK_SET);
	fputc(c ^ 0x10, f);
	fclose(f);
}

static void t_corrupt_any_byte(void **state)
{
	(void)state;
	long size = save_10_and_20();
	float p[NF];
	/* Every byte of the newest file, flipped in turn: the previous one is used. */
	for (long off = 0; off < size; off += (off < 128 ? 1 : 97)) {
		flip(ckpt_path(20), off);
		expect_restored(10, p);
		flip(ckpt_path(20), off);
	}
	flip(ckpt_path(20), size - 1);
	expect_restored(10, p);
	flip(ckpt_path(20), size - 1);
	expect_restored(20, p);
}

static void t_truncated(void **state)
{
	(void)state;
	long size = save_10_and_20();
	long cuts[] = { 0, 3, 50, 88, 200, size - 1 };
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
		assert_int_equal(truncate(ckpt_path(20), cuts[i]), 0);
		float p[NF];
		expect_restored(10, p);
	}
}

/* save a checkpoint of another job configuration (layout hash 0x999, state
 * hash 0x888: another model or placement) */
static void save_foreign(uint64_t step, int keep)
{
	float p[NF];
	struct rdmaps_ckpt_meta md = mk(step);
	md.layout_hash = 0x999;
	md.state_hash = 0x888;
	fill(p, (float)step);
	assert_int_equal(rdmaps_ckpt_save(tdir, &md, p, p, p, keep), RDMAPS_OK);
}

/* The newest valid checkpoint of another configuration stops the restore
 * (FOREIGN, named): not resumed, and nothing older of ours either, since
 * this run would overwrite and prune it.  Until 2026-12-07 it was skipped
 * and the older one of ours restored (a review). */
static void t_layout_hash(void **state)
{
	(void)state;
	save_step(10, 5);
	save_foreign(20, 5);
	float p[NF];
	struct rdmaps_ckpt_meta out;
	char path[600];
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &out, p, NULL, NULL, path, sizeof(path)),
			 RDMAPS_CKPT_FOREIGN);
	assert_string_equal(path, ckpt_path(20));
	/* the other way round: ours is newest, restored; the older foreign one is left */
	save_step(30, 5);
	expect_restored(30, p);
	/* more floats asked for: the file parses, its count differs: FOREIGN */
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF + 1, &out, p, NULL, NULL, NULL, 0),
			 RDMAPS_CKPT_FOREIGN);
	/* fewer: every file is too large to be read as one of this job's, but
	 * its header says whose it is: FOREIGN too, not skipped as damaged
	 * (then a save of its step would have replaced it) */
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF - 1, &out, p, NULL, NULL, NULL, 0),
			 RDMAPS_CKPT_FOREIGN);
}

/* Pruning counts and deletes only this layout's files: another job's, at
 * lower steps, stay (until 2026-12-07 they took keep slots and were
 * deleted: a review). */
static void t_prune_foreign(void **state)
{
	(void)state;
	for (uint64_t s = 1; s <= 3; s++)
		save_foreign(s, 5);
	for (uint64_t s = 1; s <= 4; s++)
		save_step(100 * s, 2);
	for (uint64_t s = 1; s <= 3; s++)
		assert_int_equal(access(ckpt_path(s), F_OK), 0);
	assert_int_equal(access(ckpt_path(400), F_OK), 0);
	assert_int_equal(access(ckpt_path(300), F_OK), 0);
	assert_int_not_equal(access(ckpt_path(200), F_OK), 0);
	assert_int_equal(count_files(), 5);
	/* a damaged file is not ours to delete either */
	flip(ckpt_path(300), 0);
	save_step(500, 2);
	save_step(600, 2);
	assert_int_equal(access(ckpt_path(300), F_OK), 0);
	assert_int_not_equal(access(ckpt_path(400), F_OK), 0);
}

static void t_none_valid(void **state)
{
	(void)state;
	float p[NF];
	uint64_t s;
	assert_int_equal(restore(&s, p), RDMAPS_CKPT_NONE);          /* empty dir */
	save_step(5, 5);
	flip(ckpt_path(5), 0);
	assert_int_equal(restore(&s, p), RDMAPS_CKPT_UNUSABLE);      /* only corrupt: not NONE */
	struct rdmaps_ckpt_meta md;
	assert_int_equal(rdmaps_ckpt_restore("/nonexistent/ckpt", 1, 1, SH, NF, &md, p, NULL, NULL, NULL, 0),
			 RDMAPS_CKPT_NONE);                           /* missing dir */
	/* other shard's files are not ours */
	assert_int_equal(rdmaps_ckpt_restore(tdir, 0, 0xabcdef1234ull, SH, NF, &md, p, NULL, NULL, NULL, 0),
			 RDMAPS_CKPT_NONE);
}

static void t_tmp_ignored(void **state)
{
	(void)state;
	save_step(10, 5);
	save_step(30, 5);
	char tmp[700];
	snprintf(tmp, sizeof(tmp), "%s.tmp", ckpt_path(30));
	assert_int_equal(rename(ckpt_path(30), tmp), 0);   /* a complete but unrenamed tmp */
	float p[NF];
	expect_restored(10, p);
	/* the tmp is not counted by keep, and the next save removes it (what
	 * a save interrupted by SIGKILL left stayed for good); another shard's
	 * tmp and other files are left alone */
	char other[700], mine_odd[700];
	snprintf(other, sizeof(other), "%s/shard-0-step-30.ckpt.tmp", tdir);
	snprintf(mine_odd, sizeof(mine_odd), "%s/notes.tmp", tdir);
	FILE *f = fopen(other, "w");
	assert_non_null(f);
	fclose(f);
	f = fopen(mine_odd, "w");
	assert_non_null(f);
	fclose(f);
	save_step(40, 1);
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(access(other, F_OK), 0);
	assert_int_equal(access(mine_odd, F_OK), 0);
	assert_int_equal(count_files(), 3);
	expect_restored(40, p);
}

static void t_unwritable(void **state)
{
	(void)state;
	float p[NF];
	fill(p, 1);
	struct rdmaps_ckpt_meta md = mk(1);
	assert_int_equal(rdmaps_ckpt_save("/nonexistent/dir", &md, p, NULL, NULL, 5), RDMAPS_E_IO);
	if (geteuid() != 0) {   /* root ignores mode bits */
		chmod(tdir, 0500);
		assert_int_equal(rdmaps_ckpt_save(tdir, &md, p, NULL, NULL, 5), RDMAPS_E_IO);
		chmod(tdir, 0700);
	}
	char file[600];
	snprintf(file, sizeof(file), "%s/plainfile", tdir);
	FILE *f = fopen(file, "w");
	fclose(f);
	assert_int_equal(rdmaps_ckpt_save(file, &md, p, NULL, NULL, 5), RDMAPS_E_IO);   /* ENOTDIR */
	assert_int_equal(rdmaps_ckpt_save(tdir, &md, p, NULL, NULL, 0), RDMAPS_E_INVAL);
}

/* Files named like newer checkpoints that cannot be: one larger than any
 * checkpoint of NF floats (a sparse 1 TiB file: it used to be malloc'd
 * whole, and the out-of-memory ended the restore) and a FIFO (its open
 * used to wait forever for a writer).  Both are skipped; step 10 restores. */
static void t_huge_and_fifo(void **state)
{
	(void)state;
	float p[NF];
	save_step(10, 5);
	FILE *f = fopen(ckpt_path(20), "wb");
	assert_non_null(f);
	assert_int_equal(ftruncate(fileno(f), (off_t)1 << 40), 0);
	fclose(f);
	assert_int_equal(mkfifo(ckpt_path(30), 0600), 0);
	expect_restored(10, p);
}

static void t_parse_garbage(void **state)
{
	(void)state;
	uint8_t b[256];
	memset(b, 0, sizeof(b));
	memcpy(b, "RDCK", 4);
	struct rdmaps_ckpt_meta md;
	assert_int_equal(rdmaps_ckpt_parse(b, sizeof(b), &md, NULL, NULL, NULL), RDMAPS_E_CORRUPT);
	assert_int_equal(rdmaps_ckpt_parse(b, 3, &md, NULL, NULL, NULL), RDMAPS_E_CORRUPT);
	assert_int_equal(rdmaps_ckpt_parse(NULL, 0, &md, NULL, NULL, NULL), RDMAPS_E_CORRUPT);
}

/* Only names in the writer's exact form are checkpoints: the one valid
 * file, renamed with a sign, a space or a leading zero in its numbers, is
 * not found (sscanf's %llu took those: such a copy was restored). */
static void t_names(void **state)
{
	(void)state;
	save_step(300, 5);
	const char *odd[] = { "shard-1-step- 300.ckpt", "shard-1-step-+300.ckpt", "shard-1-step-0300.ckpt",
			      "shard-01-step-300.ckpt", "shard- 1-step-300.ckpt", "shard-1-step-300.ckpt.bak" };
	char real[600], to[600];
	float p[NF];
	uint64_t st;
	snprintf(real, sizeof(real), "%s", ckpt_path(300));
	for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) {
		snprintf(to, sizeof(to), "%s/%s", tdir, odd[i]);
		assert_int_equal(rename(real, to), 0);
		if (restore(&st, p) != RDMAPS_CKPT_NONE)
			fail_msg("'%s' was taken for a checkpoint", odd[i]);
		assert_int_equal(rename(to, real), 0);
	}
	expect_restored(300, p);
}

/* One holder per shard and logdir: a second lock is IN_USE and names the
 * holder's pid; another shard's is free; closing the fd releases it. */
static void t_lock(void **state)
{
	(void)state;
	int fd, fd2;
	long holder = -1;
	assert_int_equal(rdmaps_ckpt_lock(tdir, 1, &fd, &holder), RDMAPS_OK);
	assert_true(fd >= 0);
	assert_int_equal(rdmaps_ckpt_lock(tdir, 1, &fd2, &holder), RDMAPS_E_IN_USE);
	assert_int_equal(fd2, -1);
	assert_int_equal(holder, (long)getpid());
	assert_int_equal(rdmaps_ckpt_lock(tdir, 0, &fd2, &holder), RDMAPS_OK);
	close(fd2);
	close(fd);
	assert_int_equal(rdmaps_ckpt_lock(tdir, 1, &fd, &holder), RDMAPS_OK);
	close(fd);
	/* the lock file is no checkpoint: a restore finds none */
	float p[NF];
	uint64_t st;
	assert_int_equal(restore(&st, p), RDMAPS_CKPT_NONE);
	assert_int_equal(rdmaps_ckpt_lock("/nonexistent/ckpt", 1, &fd, &holder), RDMAPS_E_IO);
}

/* A checkpoint of a job with another number of workers, sync or R (another
 * layout hash, the same state hash): resumed, and the caller can tell from
 * the layout hash it read back; pruning counts it as this job's.  Until stop
 * 34 it was FOREIGN (TF resumes such a job). */
static void t_other_workers(void **state)
{
	(void)state;
	save_step(10, 5);
	float p[NF];
	struct rdmaps_ckpt_meta md = mk(20), out;
	md.layout_hash = 0x777;
	assert_int_equal(save_meta(&md, 5), RDMAPS_OK);
	uint64_t s = 0;
	assert_int_equal(restore(&s, p), RDMAPS_OK);
	assert_int_equal(s, 20);
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &out, p, NULL, NULL, NULL, 0), RDMAPS_OK);
	assert_true(out.layout_hash == 0x777 && out.state_hash == SH);
	/* another state hash too (another model or placement): FOREIGN */
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH + 1, NF, &out, p, NULL, NULL, NULL, 0),
			 RDMAPS_CKPT_FOREIGN);
	/* keep 2: step 30 and the other workers' step 20 stay, 10 goes */
	save_step(30, 2);
	assert_int_equal(access(ckpt_path(30), F_OK), 0);
	assert_int_equal(access(ckpt_path(20), F_OK), 0);
	assert_int_not_equal(access(ckpt_path(10), F_OK), 0);
}

/* Rewrite the header of step's file: format `version`, bytes 76..83 set to
 * `hash76` (the state hash; a version-1 file's reserved words), the header
 * crc made right again. */
static void set_header(uint64_t step, uint32_t version, uint64_t hash76)
{
	FILE *f = fopen(ckpt_path(step), "r+b");
	assert_non_null(f);
	uint8_t h[88];
	assert_int_equal(fread(h, 1, sizeof(h), f), sizeof(h));
	for (int i = 0; i < 4; i++)
		h[4 + i] = (uint8_t)(version >> (8 * i));
	for (int i = 0; i < 8; i++)
		h[76 + i] = (uint8_t)(hash76 >> (8 * i));
	uint32_t c = (uint32_t)crc32(crc32(0L, Z_NULL, 0), h, 84);
	for (int i = 0; i < 4; i++)
		h[84 + i] = (uint8_t)(c >> (8 * i));
	assert_int_equal(fseek(f, 0, SEEK_SET), 0);
	assert_int_equal(fwrite(h, 1, sizeof(h), f), sizeof(h));
	assert_int_equal(fclose(f), 0);
}

/* A file of format 1 (before stop 34: bytes 76..83 reserved, no state
 * hash) is still read; it resumes only on its layout hash. */
static void t_format1(void **state)
{
	(void)state;
	save_step(40, 5);
	set_header(40, 1, 0);
	float p[NF];
	struct rdmaps_ckpt_meta out;
	expect_restored(40, p);
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &out, p, NULL, NULL, NULL, 0), RDMAPS_OK);
	assert_true(out.state_hash == 0);
	/* a job with other workers (other layout hash) cannot tell it is its own */
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0x777, SH, NF, &out, p, NULL, NULL, NULL, 0), RDMAPS_CKPT_FOREIGN);
	/* format 1 with a reserved word set: damaged */
	set_header(40, 1, (uint64_t)1 << 32);
	uint64_t s;
	assert_int_equal(restore(&s, p), RDMAPS_CKPT_UNUSABLE);
}

/* The newest file is of a format newer than this build reads (a sound
 * header): the restore stops (RDMAPS_CKPT_NEWER, named) and leaves it;
 * until stop 34 it was skipped as damaged, the older one resumed, and a
 * save of its step would have replaced it (an rdmaps downgrade). */
static void t_newer(void **state)
{
	(void)state;
	save_step(10, 5);
	save_step(20, 5);
	set_header(20, 3, SH);
	float p[NF];
	struct rdmaps_ckpt_meta out;
	char path[600] = "";
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &out, p, NULL, NULL, path, sizeof(path)),
			 RDMAPS_CKPT_NEWER);
	assert_string_equal(path, ckpt_path(20));
	/* a bad header crc is damage, whatever the version says */
	flip(ckpt_path(20), 84);
	expect_restored(10, p);
}

/* The newest checkpoint's name is a symlink whose target is missing (a
 * volume not mounted yet, say): open says ENOENT, but the name is there,
 * so it is unread, not gone: RDMAPS_E_IO naming it, not the older one. */
static void t_dangling(void **state)
{
	(void)state;
	save_step(10, 5);
	assert_int_equal(symlink("/nonexistent-rdmaps-volume/shard-1-step-20.ckpt", ckpt_path(20)), 0);
	float p[NF];
	struct rdmaps_ckpt_meta out;
	char path[600] = "", want[600];
	snprintf(want, sizeof(want), "%s", ckpt_path(20));
	assert_int_equal(rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &out, p, NULL, NULL, path, sizeof(path)),
			 RDMAPS_E_IO);
	assert_string_equal(path, want);
	assert_int_equal(unlink(want), 0);
	expect_restored(10, p);
}

/* The newest checkpoint is there but cannot be read (EACCES here: mode 0
 * for a process that is not root; as root the test runs the restore in a
 * child that drops to uid/gid 65534).  The restore stops with RDMAPS_E_IO
 * naming it, instead of resuming from the older one behind it (until stop
 * 34 it was skipped as damaged: step 10 was restored, and a later save of
 * step 20 replaced the unread file).  Readable again, step 20 restores. */
static void t_unreadable(void **state)
{
	(void)state;
	save_step(10, 5);
	save_step(20, 5);
	assert_int_equal(chmod(tdir, 0755), 0);
	assert_int_equal(chmod(ckpt_path(10), 0644), 0);
	assert_int_equal(chmod(ckpt_path(20), 0), 0);
	char want[600];
	snprintf(want, sizeof(want), "%s", ckpt_path(20));
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		if (geteuid() == 0 && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
			_exit(77);
		if (access(tdir, R_OK | X_OK))
			_exit(77); /* TMPDIR under a directory uid 65534 cannot enter */
		if (access(want, R_OK) == 0)
			_exit(77); /* still readable (a capability kept?) */
		struct rdmaps_ckpt_meta md;
		float p[NF];
		char path[600] = "";
		int rc = rdmaps_ckpt_restore(tdir, 1, 0xabcdef1234ull, SH, NF, &md, p, NULL, NULL, path, sizeof(path));
		if (rc != RDMAPS_E_IO) {
			fprintf(stderr, "restore returned %d (%s), step %llu; want RDMAPS_E_IO\n", rc,
				rdmaps_strerror(rc), rc == RDMAPS_OK ? (unsigned long long)md.global_step : 0ULL);
			_exit(1);
		}
		if (strcmp(path, want)) {
			fprintf(stderr, "restore named '%s', want '%s'\n", path, want);
			_exit(1);
		}
		_exit(0);
	}
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == 77)
		skip();
	assert_int_equal(WEXITSTATUS(st), 0);
	assert_int_equal(chmod(ckpt_path(20), 0644), 0);
	float p[NF];
	expect_restored(20, p);
}

/* A filesystem that cannot fsync a directory (EINVAL): saves succeed and
 * prune, the logdir's mkdir -p succeeds, and the ps says so once (run alone,
 * as ctest does: with TMPDIR on such a filesystem an earlier test of the
 * same process would have said it).  A real
 * failure of a directory's fsync (EIO) still fails the save. */
static void t_dir_nosync(void **state)
{
	(void)state;
	char log[600], sub[600];
	snprintf(log, sizeof(log), "%s/stderr.txt", tdir);
	fflush(stderr);
	int saved = dup(2), lfd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(saved >= 0 && lfd >= 0);
	assert_int_equal(dup2(lfd, 2), 2);
	close(lfd);
	/* no assert until stderr is back: a failed one would leave it here */
	int rcs[4];
	dir_fsyncs = 0;
	dir_fsync_errno = EINVAL;
	for (int i = 0; i < 4; i++) {
		struct rdmaps_ckpt_meta md = mk((uint64_t)(10 * i + 10));
		rcs[i] = save_meta(&md, 2);
	}
	snprintf(sub, sizeof(sub), "%s/new/logdir", tdir);
	int made = rdmaps_ckpt_mkdir(sub);
	struct rdmaps_ckpt_meta md = mk(50);
	dir_fsync_errno = EIO;
	int eio = save_meta(&md, 2);
	dir_fsync_errno = 0;
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	for (int i = 0; i < 4; i++)
		assert_int_equal(rcs[i], RDMAPS_OK);
	assert_int_equal(made, 0);
	struct stat sb;
	assert_int_equal(stat(sub, &sb), 0);
	assert_true(S_ISDIR(sb.st_mode));
	assert_int_equal(rmdir(sub), 0);
	*strrchr(sub, '/') = 0;
	assert_int_equal(rmdir(sub), 0);
	assert_int_equal(eio, RDMAPS_E_IO);
	assert_int_equal(dir_fsyncs, 7); /* 4 saves, 2 new directories' parents, the failed save */
	char buf[8192];
	FILE *f = fopen(log, "r");
	assert_non_null(f);
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	unlink(log);
	buf[n] = 0;
	int said = 0;
	for (const char *q = buf; (q = strstr(q, "cannot fsync a directory")) != NULL; q++)
		said++;
	if (said != 1 || !strstr(buf, "fsync dir"))
		fprintf(stderr, "stderr of the saves:\n%s", buf);
	assert_int_equal(said, 1);
	assert_null(strstr(buf, "--logdir: fsync of")); /* mkdir -p: no warning of its own */
	assert_non_null(strstr(buf, "fsync dir")); /* the EIO one, as an error */
	/* 50 was renamed into place before its directory's fsync failed; the
	 * pruning of 40's save kept 30 and 40 */
	assert_int_equal(count_files(), 3);
	uint64_t got = 0;
	float p[NF];
	assert_int_equal(restore(&got, p), RDMAPS_OK);
	assert_int_equal(got, 50);
	assert_int_equal(access(ckpt_path(20), F_OK), -1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest all[] = {
		cmocka_unit_test_setup_teardown(t_roundtrip, setup, teardown),
		cmocka_unit_test_setup_teardown(t_no_slots, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prune, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prune_higher, setup, teardown),
		cmocka_unit_test_setup_teardown(t_corrupt_any_byte, setup, teardown),
		cmocka_unit_test_setup_teardown(t_truncated, setup, teardown),
		cmocka_unit_test_setup_teardown(t_layout_hash, setup, teardown),
		cmocka_unit_test_setup_teardown(t_none_valid, setup, teardown),
		cmocka_unit_test_setup_teardown(t_tmp_ignored, setup, teardown),
		cmocka_unit_test_setup_teardown(t_unwritable, setup, teardown),
		cmocka_unit_test_setup_teardown(t_parse_garbage, setup, teardown),
		cmocka_unit_test_setup_teardown(t_huge_and_fifo, setup, teardown),
		cmocka_unit_test_setup_teardown(t_prune_foreign, setup, teardown),
		cmocka_unit_test_setup_teardown(t_lock, setup, teardown),
		cmocka_unit_test_setup_teardown(t_names, setup, teardown),
		cmocka_unit_test_setup_teardown(t_unreadable, setup, teardown),
		cmocka_unit_test_setup_teardown(t_other_workers, setup, teardown),
		cmocka_unit_test_setup_teardown(t_format1, setup, teardown),
		cmocka_unit_test_setup_teardown(t_newer, setup, teardown),
		cmocka_unit_test_setup_teardown(t_dangling, setup, teardown),
		cmocka_unit_test_setup_teardown(t_dir_nosync, setup, teardown),
	};
	const char *names[] = { "roundtrip", "no_slots", "prune", "prune_higher", "corrupt_any_byte", "truncated",
				"layout_hash", "none_valid", "tmp_ignored", "unwritable", "parse_garbage", "huge_and_fifo",
				"prune_foreign", "lock", "names", "unreadable", "other_workers", "format1", "newer", "dangling",
				"dir_nosync" };
	rdmaps_log_set_level(RDMAPS_LOG_WARN);
	if (argc > 1) {
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			if (strcmp(argv[1], names[i]) == 0)
				return _cmocka_run_group_tests(names[i], &all[i], 1, NULL, NULL);
		fprintf(stderr, "unknown test %s\n", argv[1]);
		return 2;
	}
	return cmocka_run_group_tests(all, NULL, NULL);
}
