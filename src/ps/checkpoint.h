/* Parameter-shard checkpoints: one file per (shard, global step) in a log
 * directory, written atomically (tmp + fsync + rename + dir fsync), CRC32
 * over the header and every section.  Format: docs/checkpoint.md. */
#ifndef RDMAPS_PS_CHECKPOINT_H
#define RDMAPS_PS_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

struct rdmaps_ckpt_meta {
	uint32_t shard;
	uint32_t nshards;
	uint64_t layout_hash;
	uint64_t global_step;
	double beta1_power, beta2_power;
	uint64_t nfloats;
	/* what the saved state depends on (model, floats, placement), not the
	 * number of workers, sync or R; 0 in a version-1 file (before stop 34) */
	uint64_t state_hash;
};

/* rdmaps_ckpt_restore found no checkpoint of the shard: start clean (not
 * an error). */
#define RDMAPS_CKPT_NONE 1
/* ... the newest readable checkpoint of the shard is another job
 * configuration's (float count, or both layout and state hash differ): not
 * ours to resume, nor to overwrite or prune. */
#define RDMAPS_CKPT_FOREIGN 2
/* ... checkpoints of the shard are there, and none of them is valid. */
#define RDMAPS_CKPT_UNUSABLE 3
/* ... the newest one is of a newer format than this build reads (a sound
 * header): not skipped as damaged, nor resumed behind, nor overwritten. */
#define RDMAPS_CKPT_NEWER 4

/* mkdir -p DIR (mode 0755), each directory it creates made durable in its
 * parent (fsync; a checkpoint's own fsyncs cover its file and its
 * directory's entry for it, not the entries of directories created for
 * it; a parent that cannot be synced is warned about).  0, or -1 with errno
 * set (ENAMETOOLONG for a path of PATH_MAX bytes or more). */
int rdmaps_ckpt_mkdir(const char *dir);

/* Take shard's lock in DIR (DIR/shard-<s>.lock, flock, exclusive, no wait)
 * and write this pid into it: one running ps per shard and logdir, so that
 * two jobs given the same --logdir do not write, replace and prune each
 * other's checkpoints.  The lock is held while *fd stays open (the process's
 * life: released by the kernel at exit, however it ends).  Returns
 * RDMAPS_OK, RDMAPS_E_IN_USE (another process holds it; *holder = its pid as
 * written, or 0) or RDMAPS_E_IO (logged). */
int rdmaps_ckpt_lock(const char *dir, uint32_t shard, int *fd, long *holder);

/* Write params, m, v (each meta->nfloats; m and v may be NULL, stored absent)
 * to DIR/shard-<s>-step-<gstep>.ckpt atomically, then keep the newest `keep`
 * (>= 1) checkpoints of this shard and layout with a step <= gstep and
 * delete older ones (files of higher steps, files this job would not
 * resume, and files that cannot be read, are left alone and not counted).
 * Returns RDMAPS_OK, RDMAPS_E_INVAL (bad argument), RDMAPS_E_NOMEM or
 * RDMAPS_E_IO (logged with the path and errno). */
int rdmaps_ckpt_save(const char *dir, const struct rdmaps_ckpt_meta *meta,
		     const float *params, const float *m, const float *v, int keep);

/* Restore the newest valid checkpoint of `shard` in DIR.  Corrupt files
 * are logged (RDMAPS_WARN, name and reason) and skipped, down to an older
 * one; *.tmp files are ignored.  A file that cannot be read (open or read
 * fails: EACCES, EIO, ...) stops the search: RDMAPS_E_IO, logged, named in
 * path_out (it may be the newest and valid).  The newest valid file decides:
 * resumed when it has nfloats floats and either layout_hash or (a version-2
 * file) state_hash is this job's; compare meta->layout_hash to see which (a
 * job with another number of workers, sync or R resumes on the state hash);
 * else RDMAPS_CKPT_FOREIGN, and the search stops; so does a file of a
 * newer format (RDMAPS_CKPT_NEWER, logged).  Buffers are
 * caller-allocated with nfloats floats; m / v may be NULL (not copied).  If
 * the file has no m (v) section and m (v) is non-NULL, it is zero-filled.
 * path_out (may be NULL) receives the file used, or for FOREIGN, NEWER and
 * UNUSABLE the newest file of the shard that decided it.
 * Returns RDMAPS_OK (outputs filled), RDMAPS_CKPT_NONE (no checkpoint of the
 * shard, or DIR missing: clean start), RDMAPS_CKPT_FOREIGN, RDMAPS_CKPT_NEWER,
 * RDMAPS_CKPT_UNUSABLE (files there, none valid), RDMAPS_E_INVAL,
 * RDMAPS_E_NOMEM, RDMAPS_E_IO (DIR or a checkpoint file unreadable). */
int rdmaps_ckpt_restore(const char *dir, uint32_t shard, uint64_t layout_hash,
			uint64_t state_hash, uint64_t nfloats, struct rdmaps_ckpt_meta *meta, float *params,
			float *m, float *v, char *path_out, size_t path_len);

/* Parse and validate a checkpoint image in memory.  On RDMAPS_OK, *meta is
 * filled and *params / *m / *v point into buf (NULL for an absent section);
 * the pointers may be unaligned: copy with memcpy.  Any of the output
 * pointers may be NULL.  Returns RDMAPS_OK or RDMAPS_E_CORRUPT (no log). */
int rdmaps_ckpt_parse(const void *buf, size_t len, struct rdmaps_ckpt_meta *meta,
		      const float **params, const float **m, const float **v);

/* Reason text for the last RDMAPS_E_CORRUPT of rdmaps_ckpt_parse in this
 * thread (e.g. "bad magic", "header crc"). */
const char *rdmaps_ckpt_last_reason(void);

#endif
