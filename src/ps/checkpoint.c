/* Checkpoint save / restore / parse.  Format in docs/checkpoint.md. */
#include "ps/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "common/status.h"

#define CK_MAGIC "RDCK"
#define CK_VERSION 2u     /* written; 1 is still read */
#define CK_HDR_LEN 88u
#define CK_MAX_FLOATS (UINT64_C(1) << 40)

/* Header (little-endian):
 *  0 "RDCK" 4 u32 version 8 u32 shard 12 u32 nshards 16 u64 layout_hash
 * 24 u64 global_step 32 f64 beta1_power 40 f64 beta2_power 48 u64 nfloats
 * 56 u32 flags (bit0 m present, bit1 v present) 60 u32 nsections (1..3)
 * 64 u64 section_bytes (each section = nfloats*4 + 4-byte crc)
 * 72 u32 params_crc 76 u64 state_hash (version 2; version 1: two u32
 * reserved 0) 84 u32 header_crc (crc32 of bytes 0..83).  Then params, [m],
 * [v], each followed by u32 crc. */

static _Thread_local const char *last_reason = "";

const char *rdmaps_ckpt_last_reason(void) { return last_reason; }

static void put32(uint8_t *p, uint32_t v) { for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static void put64(uint8_t *p, uint64_t v) { for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i)); }
static uint32_t get32(const uint8_t *p)
{
	uint32_t v = 0;
	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
static uint64_t get64(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bitsd(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static uint32_t crc(const void *p, size_t n)
{
	uLong c = crc32(0L, Z_NULL, 0);
	const uint8_t *b = p;
	while (n > 0) {
		uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
		c = crc32(c, b, k);
		b += k;
		n -= k;
	}
	return (uint32_t)c;
}

/* Floats are stored little-endian; this host is little-endian (x86-64). */
_Static_assert(sizeof(float) == 4, "float is 4 bytes");

static int corrupt(const char *why)
{
	last_reason = why;
	return RDMAPS_E_CORRUPT;
}

static const char version_fault[] = "unsupported version";

/* The fixed header's own checks on its CK_HDR_LEN bytes: NULL when the
 * magic, header crc and version (1..CK_VERSION) are right, else what is
 * wrong; version_fault only when the magic and crc are right. */
static const char *header_fault(const uint8_t *b)
{
	if (memcmp(b, CK_MAGIC, 4) != 0)
		return "bad magic";
	if (get32(b + 84) != crc(b, 84))
		return "header crc mismatch";
	if (get32(b + 4) < 1 || get32(b + 4) > CK_VERSION)
		return version_fault;
	return NULL;
}

/* An open of path that failed with e: 1 when the name is gone (since the
 * listing) or is a socket (ENXIO), which the restore skips as it skips a
 * damaged file; 0 when the file is there but unread (EACCES, EMFILE, a
 * symlink to a missing target, say on a volume not mounted yet, ...). */
static int gone_on_open(const char *path, int e)
{
	struct stat ls;
	return e == ENXIO || (e == ENOENT && lstat(path, &ls) != 0);
}

/* The meta fields of a header that passed header_fault. */
static void header_meta(const uint8_t *b, struct rdmaps_ckpt_meta *meta)
{
	meta->shard = get32(b + 8);
	meta->nshards = get32(b + 12);
	meta->layout_hash = get64(b + 16);
	meta->global_step = get64(b + 24);
	meta->beta1_power = bitsd(get64(b + 32));
	meta->beta2_power = bitsd(get64(b + 40));
	meta->nfloats = get64(b + 48);
	meta->state_hash = get32(b + 4) >= 2 ? get64(b + 76) : 0;
}

/* 1 when a checkpoint of header hd is this job's to resume: the same
 * floats, and the same layout hash or (version 2) the same state hash, which
 * leaves out the number of workers, sync and R (docs/checkpoint.md). */
static int resumable(const struct rdmaps_ckpt_meta *hd, uint64_t layout_hash, uint64_t state_hash,
		     uint64_t nfloats)
{
	return hd->nfloats == nfloats &&
	       (hd->layout_hash == layout_hash || (hd->state_hash && hd->state_hash == state_hash));
}

int rdmaps_ckpt_parse(const void *buf, size_t len, struct rdmaps_ckpt_meta *meta,
		      const float **params, const float **m, const float **v)
{
	const uint8_t *b = buf;
	const char *fault;
	if (!buf || len < CK_HDR_LEN)
		return corrupt("truncated header");
	if ((fault = header_fault(b)))
		return corrupt(fault);
	struct rdmaps_ckpt_meta hm;
	header_meta(b, &hm);
	uint32_t flags = get32(b + 56), nsec = get32(b + 60);
	uint64_t secbytes = get64(b + 64);
	if (hm.nshards == 0 || hm.shard >= hm.nshards)
		return corrupt("bad shard/nshards");
	if (flags & ~3u || (get32(b + 4) == 1 && (get32(b + 76) || get32(b + 80))))
		return corrupt("bad flags/reserved");
	if (nsec != 1u + (flags & 1u) + ((flags >> 1) & 1u))
		return corrupt("section count does not match flags");
	if (hm.nfloats == 0 || hm.nfloats > CK_MAX_FLOATS || secbytes != hm.nfloats * 4)
		return corrupt("bad section length");
	uint64_t body = (uint64_t)nsec * (secbytes + 4);
	if ((uint64_t)(len - CK_HDR_LEN) < body)
		return corrupt("truncated section");
	if ((uint64_t)(len - CK_HDR_LEN) > body)
		return corrupt("trailing bytes");
	const uint8_t *sec[3] = { NULL, NULL, NULL };
	const uint8_t *p = b + CK_HDR_LEN;
	for (int i = 0; i < 3; i++) {
		if (i > 0 && !(flags & (1u << (i - 1))))
			continue;
		uint32_t want = get32(p + secbytes);
		if (crc(p, (size_t)secbytes) != want || (i == 0 && want != get32(b + 72)))
			return corrupt(i == 0 ? "params crc mismatch" : i == 1 ? "m crc mismatch" : "v crc mismatch");
		sec[i] = p;
		p += secbytes + 4;
	}
	if (meta)
		*meta = hm;
	if (params)
		*params = (const float *)(const void *)sec[0];
	if (m)
		*m = (const float *)(const void *)sec[1];
	if (v)
		*v = (const float *)(const void *)sec[2];
	return RDMAPS_OK;
}

static int write_all(int fd, const void *p, size_t n, const char *path)
{
	const uint8_t *b = p;
	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			RDMAPS_ERR("checkpoint: write %s: %s", path, strerror(errno));
			return RDMAPS_E_IO;
		}
		b += w;
		n -= (size_t)w;
	}
	return RDMAPS_OK;
}

/* A decimal number as the writer prints it (digits only, no sign, space or
 * leading zero, at most max) at *p; advances *p.  1 on success. */
static int take_num(const char **p, uint64_t max, uint64_t *out)
{
	const char *c = *p;
	uint64_t v = 0;
	if (*c < '0' || *c > '9' || (c[0] == '0' && c[1] >= '0' && c[1] <= '9'))
		return 0;
	for (; *c >= '0' && *c <= '9'; c++) {
		unsigned d = (unsigned)(*c - '0');
		if (v > (max - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*p = c;
	*out = v;
	return 1;
}

/* Parse "shard-<s>-step-<g>.ckpt" exactly (the form the writer prints:
 * sscanf's %llu took a sign, spaces and leading zeros: a review); 1 on
 * match. */
static int parse_name(const char *name, uint32_t *s, uint64_t *g)
{
	uint64_t ss, gg;
	const char *c = name;
	if (strncmp(c, "shard-", 6))
		return 0;
	c += 6;
	if (!take_num(&c, UINT32_MAX, &ss) || strncmp(c, "-step-", 6))
		return 0;
	c += 6;
	if (!take_num(&c, UINT64_MAX, &gg) || strcmp(c, ".ckpt"))
		return 0;
	*s = (uint32_t)ss;
	*g = gg;
	return 1;
}

struct ent { uint64_t step; char name[64]; };

static int cmp_desc(const void *a, const void *b)
{
	uint64_t x = ((const struct ent *)a)->step, y = ((const struct ent *)b)->step;
	return x < y ? 1 : x > y ? -1 : 0;
}

/* List this shard's *.ckpt files, newest step first.  *out malloc'd. */
static int list_shard(const char *dir, uint32_t shard, struct ent **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? RDMAPS_CKPT_NONE : RDMAPS_E_IO;
	size_t cap = 0;
	struct ent *e = NULL;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		uint32_t s;
		uint64_t g;
		if (!parse_name(de->d_name, &s, &g) || s != shard || strlen(de->d_name) >= 64)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			struct ent *ne = realloc(e, cap * sizeof(*e));
			if (!ne) {
				free(e);
				closedir(d);
				return RDMAPS_E_NOMEM;
			}
			e = ne;
		}
		e[*n].step = g;
		memcpy(e[*n].name, de->d_name, strlen(de->d_name) + 1);   /* < 64, checked above */
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(e, *n, sizeof(*e), cmp_desc);
	*out = e;
	return RDMAPS_OK;
}

/* Remove this shard's "shard-<s>-step-<g>.ckpt.tmp" files: what a save
 * interrupted by SIGKILL or a crash left (one ps serves a shard, and its own
 * save has just renamed its file, so none is being written).  Only a
 * save of that same step overwrote one; the others stayed for good. */
static void prune_tmp(const char *dir, uint32_t shard)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *de;
	while ((de = readdir(d)) != NULL) {
		uint32_t s;
		uint64_t g;
		char name[64];
		size_t l = strlen(de->d_name);
		if (l < 5 || l >= sizeof(name) || strcmp(de->d_name + l - 4, ".tmp"))
			continue;
		memcpy(name, de->d_name, l - 4);
		name[l - 4] = '\0';
		if (!parse_name(name, &s, &g) || s != shard)
			continue;
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (unlink(path) == 0)
			RDMAPS_WARN("checkpoint: removed %s, left by an interrupted save", path);
	}
	closedir(d);
}

/* The header of the checkpoint file at path, when it has a valid one
 * (header_fault): 1 and *h filled from it; else 0, or -1 (errno set) when
 * the file is there but its open or read failed (read_file's rule).  When
 * newer is not NULL, *newer is the format of a sound header (magic, header
 * crc) newer than this build reads, else 0: skipped as damaged, such a file
 * would be replaced by a save of its step after the job resumed from an
 * older one (a downgrade of rdmaps).  Reads CK_HDR_LEN bytes only,
 * whatever the file's size. */
static int read_header(const char *path, struct rdmaps_ckpt_meta *h, uint32_t *newer)
{
	if (newer)
		*newer = 0;
	uint8_t b[CK_HDR_LEN];
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		if (gone_on_open(path, e))
			return 0;
		errno = e;
		return -1;
	}
	ssize_t got;
	do
		got = read(fd, b, sizeof(b));
	while (got < 0 && errno == EINTR);
	int e = errno;
	close(fd);
	if (got < 0 && e != EISDIR) { /* a directory: not a regular file, skipped */
		errno = e;
		return -1;
	}
	if (got != (ssize_t)sizeof(b))
		return 0;
	const char *fault = header_fault(b);
	if (fault) {
		if (newer && fault == version_fault && get32(b + 4) > CK_VERSION)
			*newer = get32(b + 4);
		return 0;
	}
	header_meta(b, h);
	return 1;
}

/* 1 when the file at path has a valid checkpoint header that a job of
 * meta's hashes and floats would resume (resumable), else 0. */
static int same_layout(const char *path, const struct rdmaps_ckpt_meta *meta)
{
	struct rdmaps_ckpt_meta hd;
	return read_header(path, &hd, NULL) == 1 &&
	       resumable(&hd, meta->layout_hash, meta->state_hash, meta->nfloats);
}

/* fsync the directory dir: 0, or -1 with errno set (a failure is not
 * logged here: the callers say what it cost).  A
 * filesystem that has no fsync for directories answers EINVAL (Linux's
 * vfs_fsync_range when the directory's operations lack one: 9p without
 * .L, vboxsf) or, taken here too, EOPNOTSUPP.  That is not a failed save:
 * there is nothing more to ask of such a filesystem.  It is logged once
 * per process and counts as synced (PostgreSQL's fsync_fname_ext ignores
 * EINVAL and EBADF for directories, silently); every other error fails. */
static atomic_int dir_nosync_warned;

static int sync_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int r = fsync(fd), e = errno;
	close(fd);
	if (r != 0 && (e == EINVAL || e == EOPNOTSUPP)) {
		if (!atomic_exchange(&dir_nosync_warned, 1))
			RDMAPS_WARN("checkpoint: the filesystem of %s cannot fsync a directory (%s): checkpoints "
				    "are saved without it, so after a power loss the newest one's name may be "
				    "missing and an older one restored (said once)", dir, strerror(e));
		return 0;
	}
	errno = e;
	return r;
}

static int fsync_dir(const char *dir)
{
	if (sync_dir(dir)) {
		RDMAPS_ERR("checkpoint: fsync dir %s: %s", dir, strerror(errno));
		return RDMAPS_E_IO;
	}
	return RDMAPS_OK;
}

/* The directory holding path p (its parent; "." for a name without '/')
 * synced, so that a directory just created there survives a crash; a
 * failure is a warning (a filesystem that cannot: sync_dir). */
static void sync_parent(const char *p)
{
	char d[PATH_MAX];
	const char *slash = strrchr(p, '/');
	if (!slash)
		snprintf(d, sizeof(d), ".");
	else if (slash == p)
		snprintf(d, sizeof(d), "/");
	else
		snprintf(d, sizeof(d), "%.*s", (int)(slash - p), p);
	if (sync_dir(d))
		RDMAPS_WARN("checkpoint: --logdir: fsync of %s after creating %s: %s (the new directory may not "
			    "survive a crash)", d, p, strerror(errno));
}

int rdmaps_ckpt_mkdir(const char *dir)
{
	char p[PATH_MAX];
	if (strlen(dir) >= sizeof(p)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(p, sizeof(p), "%s", dir);
	for (char *c = p + 1;; c++) {
		if (*c == '/' || !*c) {
			char save = *c;
			*c = 0;
			if (mkdir(p, 0755) == 0)
				sync_parent(p);
			else if (errno != EEXIST)
				return -1;
			*c = save;
			if (!save)
				break;
		}
	}
	return 0;
}

int rdmaps_ckpt_lock(const char *dir, uint32_t shard, int *fd, long *holder)
{
	char path[4096], txt[32];
	*fd = -1;
	*holder = 0;
	if (snprintf(path, sizeof(path), "%s/shard-%" PRIu32 ".lock", dir, shard) >= (int)sizeof(path)) {
		RDMAPS_ERR("checkpoint: lock: directory path too long");
		return RDMAPS_E_INVAL;
	}
	int f = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (f < 0) {
		RDMAPS_ERR("checkpoint: open %s: %s", path, strerror(errno));
		return RDMAPS_E_IO;
	}
	if (flock(f, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		if (e == EWOULDBLOCK) {
			ssize_t n = pread(f, txt, sizeof(txt) - 1, 0);
			if (n > 0) {
				txt[n] = '\0';
				*holder = strtol(txt, NULL, 10);
			}
			close(f);
			return RDMAPS_E_IN_USE;
		}
		if (e == ENOLCK || e == EOPNOTSUPP) {
			/* a filesystem without locks (NFS without its lock
			 * daemon): the checkpoints still work, unguarded */
			RDMAPS_WARN("checkpoint: cannot lock %s (%s): nothing keeps a second job off this "
				    "--logdir", path, strerror(e));
			close(f);
			return RDMAPS_OK;
		}
		RDMAPS_ERR("checkpoint: flock %s: %s", path, strerror(e));
		close(f);
		return RDMAPS_E_IO;
	}
	int n = snprintf(txt, sizeof(txt), "%ld\n", (long)getpid());
	if (ftruncate(f, 0) != 0 || pwrite(f, txt, (size_t)n, 0) != n)
		RDMAPS_WARN("checkpoint: writing the pid into %s: %s", path, strerror(errno)); /* still locked */
	*fd = f;
	return RDMAPS_OK;
}

int rdmaps_ckpt_save(const char *dir, const struct rdmaps_ckpt_meta *meta,
		     const float *params, const float *m, const float *v, int keep)
{
	if (!dir || !meta || !params || keep < 1 || meta->nfloats == 0 ||
	    meta->nfloats > CK_MAX_FLOATS || meta->nshards == 0 || meta->shard >= meta->nshards) {
		RDMAPS_ERR("checkpoint: save: bad argument");
		return RDMAPS_E_INVAL;
	}
	size_t secbytes = (size_t)meta->nfloats * 4;
	uint8_t h[CK_HDR_LEN];
	memset(h, 0, sizeof(h));
	memcpy(h, CK_MAGIC, 4);
	put32(h + 4, CK_VERSION);
	put32(h + 8, meta->shard);
	put32(h + 12, meta->nshards);
	put64(h + 16, meta->layout_hash);
	put64(h + 24, meta->global_step);
	put64(h + 32, dbits(meta->beta1_power));
	put64(h + 40, dbits(meta->beta2_power));
	put64(h + 48, meta->nfloats);
	uint32_t flags = (m ? 1u : 0u) | (v ? 2u : 0u);
	put32(h + 56, flags);
	put32(h + 60, 1u + (m ? 1u : 0u) + (v ? 1u : 0u));
	put64(h + 64, secbytes);
	uint32_t pc = crc(params, secbytes);
	put32(h + 72, pc);
	put64(h + 76, meta->state_hash);
	put32(h + 84, crc(h, 84));

	char path[4096], tmp[4096];
	int n1 = snprintf(path, sizeof(path), "%s/shard-%" PRIu32 "-step-%" PRIu64 ".ckpt", dir,
			  meta->shard, meta->global_step);
	int n2 = snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (n1 < 0 || n2 < 0 || (size_t)n2 >= sizeof(tmp)) {
		RDMAPS_ERR("checkpoint: save: directory path too long");
		return RDMAPS_E_INVAL;
	}
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		RDMAPS_ERR("checkpoint: open %s: %s", tmp, strerror(errno));
		return RDMAPS_E_IO;
	}
	int rc = write_all(fd, h, sizeof(h), tmp);
	const float *secs[3] = { params, m, v };
	for (int i = 0; rc == RDMAPS_OK && i < 3; i++) {
		if (!secs[i])
			continue;
		uint8_t c[4];
		put32(c, i == 0 ? pc : crc(secs[i], secbytes));
		rc = write_all(fd, secs[i], secbytes, tmp);
		if (rc == RDMAPS_OK)
			rc = write_all(fd, c, 4, tmp);
	}
	if (rc == RDMAPS_OK && fsync(fd) != 0) {
		RDMAPS_ERR("checkpoint: fsync %s: %s", tmp, strerror(errno));
		rc = RDMAPS_E_IO;
	}
	if (close(fd) != 0 && rc == RDMAPS_OK) {
		RDMAPS_ERR("checkpoint: close %s: %s", tmp, strerror(errno));
		rc = RDMAPS_E_IO;
	}
	if (rc == RDMAPS_OK && rename(tmp, path) != 0) {
		RDMAPS_ERR("checkpoint: rename %s -> %s: %s", tmp, path, strerror(errno));
		rc = RDMAPS_E_IO;
	}
	if (rc != RDMAPS_OK) {
		unlink(tmp);
		return rc;
	}
	rc = fsync_dir(dir);
	if (rc != RDMAPS_OK)
		return rc;

	/* Prune: keep the newest `keep` of this shard and layout up to this
	 * step.  Files of higher steps are neither counted nor deleted
	 * (counting them would delete this very save), nor are files of
	 * another layout or that cannot be read: another job's, or damaged
	 * ones, which are not ours to delete. */
	struct ent *e;
	size_t n;
	int lr = list_shard(dir, meta->shard, &e, &n);
	if (lr == RDMAPS_OK) {
		size_t kept = 0;
		for (size_t i = 0; i < n; i++) {
			char old[4096];
			snprintf(old, sizeof(old), "%s/%s", dir, e[i].name);
			if (e[i].step > meta->global_step || !same_layout(old, meta) ||
			    kept++ < (size_t)keep)
				continue;
			if (unlink(old) != 0)
				RDMAPS_WARN("checkpoint: prune %s: %s", old, strerror(errno));
		}
		free(e);
	} else {
		RDMAPS_WARN("checkpoint: prune: cannot list %s", dir);
	}
	prune_tmp(dir, meta->shard);
	return RDMAPS_OK;
}

/* Read a whole file of at most max bytes; RDMAPS_OK, RDMAPS_E_NOMEM, or
 * (reason in *why):
 * - RDMAPS_E_CORRUPT, skipped by the restore as a damaged file is: one
 *   that is not a regular file (or is gone since the listing), or larger
 *   than any checkpoint of this shard can be, before anything is allocated
 *   or read: a stray huge file or a FIFO named like a checkpoint must not
 *   stop the restore (O_NONBLOCK: opening a FIFO would otherwise wait for a
 *   writer);
 * - RDMAPS_E_IO: the file is there but cannot be read now (EACCES, EIO,
 *   EMFILE, ...).  Until stop 34 this too was skipped as damaged, and the
 *   job resumed from an older checkpoint, silently going back in training,
 *   and later replaced the unread file by a save of its step. */
static int read_file(const char *path, size_t max, uint8_t **buf, size_t *len, const char **why)
{
	*buf = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		int e = errno;
		*why = strerror(e);
		return gone_on_open(path, e) ? RDMAPS_E_CORRUPT : RDMAPS_E_IO;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		*why = strerror(errno);
		close(fd);
		return RDMAPS_E_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return RDMAPS_E_CORRUPT;
	}
	if ((uint64_t)st.st_size > max) {
		*why = "larger than any checkpoint of this shard's floats can be (one of another model or layout?)";
		close(fd);
		return RDMAPS_E_CORRUPT;
	}
	size_t n = (size_t)st.st_size, got = 0;
	uint8_t *b = malloc(n ? n : 1);
	if (!b) {
		close(fd);
		*why = "out of memory";
		return RDMAPS_E_NOMEM;
	}
	while (got < n) {
		ssize_t r = read(fd, b + got, n - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			*why = strerror(errno);
			close(fd);
			free(b);
			return RDMAPS_E_IO;
		}
		if (r == 0)
			break; /* shorter than its size said: the parse says truncated */
		got += (size_t)r;
	}
	close(fd);
	*buf = b;
	*len = got;
	return RDMAPS_OK;
}

/* path into path_out (the restore's "the file that decided"), when given. */
static void name_path(char *path_out, size_t path_len, const char *path)
{
	if (path_out && path_len)
		snprintf(path_out, path_len, "%s", path);
}

/* A checkpoint file that is there but cannot be read (why): not damaged,
 * only unread, so the restore stops there: an older one would resume the
 * job behind it, and a save of its step would replace it.  Logged, named in
 * path_out; RDMAPS_E_IO. */
static int unread(const char *path, const char *why, char *path_out, size_t path_len)
{
	RDMAPS_ERR("checkpoint: cannot read %s: %s", path, why);
	name_path(path_out, path_len, path);
	return RDMAPS_E_IO;
}

/* A valid checkpoint at path of another job configuration: logged with
 * both hashes and counts, named in path_out; RDMAPS_CKPT_FOREIGN. */
static int foreign(const char *path, uint64_t hash, uint64_t nf, uint64_t layout_hash, uint64_t nfloats,
		   char *path_out, size_t path_len)
{
	RDMAPS_ERR("checkpoint: %s is of another job configuration (layout hash %016llx, %llu floats; "
		   "this job: %016llx, %llu)", path, (unsigned long long)hash, (unsigned long long)nf,
		   (unsigned long long)layout_hash, (unsigned long long)nfloats);
	name_path(path_out, path_len, path);
	return RDMAPS_CKPT_FOREIGN;
}

int rdmaps_ckpt_restore(const char *dir, uint32_t shard, uint64_t layout_hash,
			uint64_t state_hash, uint64_t nfloats, struct rdmaps_ckpt_meta *meta, float *params,
			float *m, float *v, char *path_out, size_t path_len)
{
	if (!dir || !meta || !params || nfloats == 0) {
		RDMAPS_ERR("checkpoint: restore: bad argument");
		return RDMAPS_E_INVAL;
	}
	struct ent *e;
	size_t n;
	int rc = list_shard(dir, shard, &e, &n);
	if (rc == RDMAPS_CKPT_NONE)
		return RDMAPS_CKPT_NONE;
	if (rc == RDMAPS_E_IO) {
		RDMAPS_ERR("checkpoint: opendir %s: %s", dir, strerror(errno));
		return rc;
	}
	if (rc != RDMAPS_OK)
		return rc;
	/* files there and none valid: UNUSABLE (none there: NONE) */
	rc = n ? RDMAPS_CKPT_UNUSABLE : RDMAPS_CKPT_NONE;
	if (n && path_out && path_len)
		snprintf(path_out, path_len, "%s/%s", dir, e[0].name);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		snprintf(path, sizeof(path), "%s/%s", dir, e[i].name);
		uint8_t *buf;
		size_t len;
		const char *why = "";
		/* a valid header of another configuration decides before the file
		 * is read: one of a larger model is too large to be read as ours
		 * and would be skipped as damaged, then replaced by a save of its
		 * step (a review) */
		struct rdmaps_ckpt_meta hd;
		uint32_t fv;
		int hr = read_header(path, &hd, &fv);
		if (hr < 0) {
			rc = unread(path, strerror(errno), path_out, path_len);
			break;
		}
		if (fv) {
			RDMAPS_ERR("checkpoint: %s is of format %" PRIu32 ", written by a newer rdmaps (this one "
				   "reads formats 1 to %u)", path, fv, CK_VERSION);
			name_path(path_out, path_len, path);
			rc = RDMAPS_CKPT_NEWER;
			break;
		}
		if (hr == 1 && hd.shard == shard && hd.global_step == e[i].step &&
		    !resumable(&hd, layout_hash, state_hash, nfloats)) {
			rc = foreign(path, hd.layout_hash, hd.nfloats, layout_hash, nfloats, path_out, path_len);
			break;
		}
		/* header + params, m, v, each with its crc (docs/checkpoint.md) */
		size_t max = CK_HDR_LEN + 3 * ((size_t)nfloats * 4 + 4);
		int r = read_file(path, max, &buf, &len, &why);
		if (r == RDMAPS_E_NOMEM) {
			rc = r;
			break;
		}
		if (r == RDMAPS_E_IO) {
			rc = unread(path, why, path_out, path_len);
			break;
		}
		if (r != RDMAPS_OK) {
			RDMAPS_WARN("checkpoint: skipping %s: %s", path, why);
			continue;
		}
		struct rdmaps_ckpt_meta md;
		const float *pp, *pm, *pv;
		r = rdmaps_ckpt_parse(buf, len, &md, &pp, &pm, &pv);
		if (r != RDMAPS_OK)
			why = rdmaps_ckpt_last_reason();
		else if (md.shard != shard)
			why = "shard in header does not match", r = RDMAPS_E_CORRUPT;
		else if (md.global_step != e[i].step)
			why = "step in header does not match file name", r = RDMAPS_E_CORRUPT;
		if (r != RDMAPS_OK) {
			RDMAPS_WARN("checkpoint: skipping %s: %s", path, why);
			free(buf);
			continue;
		}
		if (!resumable(&md, layout_hash, state_hash, nfloats)) {
			/* the header check above decides this before the read;
			 * kept for a file replaced between the two reads: its
			 * parameters must not be taken for ours */
			free(buf);
			rc = foreign(path, md.layout_hash, md.nfloats, layout_hash, nfloats, path_out, path_len);
			break;
		}
		size_t sb = (size_t)nfloats * 4;
		memcpy(params, pp, sb);
		if (m) {
			if (pm)
				memcpy(m, pm, sb);
			else
				memset(m, 0, sb);
		}
		if (v) {
			if (pv)
				memcpy(v, pv, sb);
			else
				memset(v, 0, sb);
		}
		*meta = md;
		name_path(path_out, path_len, path);
		free(buf);
		rc = RDMAPS_OK;
		break;
	}
	free(e);
	return rc;
}
