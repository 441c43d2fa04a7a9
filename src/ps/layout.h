/* rdmaps: the memory layout of one ps shard and of a worker's mailbox, and
 * the grant ids.  All words are little-endian u64 in host order (x86-64);
 * docs/memory-layout.md draws them. */
#ifndef RDMAPS_LAYOUT_H
#define RDMAPS_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "cli/job.h"
#include "ps/placement.h"

#define RDMAPS_MAGIC 0x5350414d44524452ull /* "RDRDMAPS" */
#define RDMAPS_BUSY (1ull << 63)           /* version word: buffer being written */
#define RDMAPS_ROLE_WORKER 1

/* grant ids on the ps side of a connection */
enum { G_PS_PARAMS = 0, G_PS_SLOT = 1, G_PS_COUNTERS = 2, G_PS_MBOX_SRC = 3 };
/* grant ids on the worker side (local buffers of its own ops, but the
 * mailbox).  The worker grants its flat model vectors themselves: parameter
 * pieces are READ straight into PARAMS_DST, gradient pieces WRITTEN straight
 * from GRAD_SRC, the 64 B slot header from SLOT_HDR (docs/protocol.md). */
enum { G_W_MAILBOX = 0, G_W_PARAMS_DST = 1, G_W_GRAD_SRC = 2, G_W_ATOMIC = 3, G_W_SCRATCH = 4, G_W_SLOT_HDR = 5 };

/* PARAMS region: header (64 B), then buffer 0 and buffer 1. */
struct rdmaps_params_hdr {
	uint64_t magic;
	uint64_t state;           /* 0 = uninitialized, 1 = ready */
	uint64_t current_version; /* newest published version (global step of this shard) */
	uint64_t nfloats;
	/* bitmap of the workers (0..255) a sync aggregation is waiting for, set
	 * by the ps once it waited --barrier_timeout, cleared at the next update;
	 * workers READ it to name the missing ones */
	uint64_t missing[4];
};
#define RDMAPS_MISSING_MAX 256
#define PARAMS_STATE_READY 1

/* SLOT region header (64 B), then the gradient floats. */
struct rdmaps_slot_hdr {
	uint64_t step;            /* params version the gradient was computed on */
	uint64_t seq;             /* this worker's push number: 1, 2, ... */
	uint32_t kind;            /* SLOT_GRAD or SLOT_INIT */
	uint32_t worker;
	double loss;
	uint64_t pad[4];
};
enum { SLOT_GRAD = 1, SLOT_INIT = 2 };

/* mailbox value written by the ps: released version << 32 | token seq */
#define MBOX_VERSION(w) ((w) >> 32)
#define MBOX_TOKEN(w) ((w) & 0xffffffffull)

/* The mailbox is 16 bytes, the value and its complement, written by one
 * 16-byte WRITE.  Neither backend promises that the 8-byte value lands in
 * one store: rxe and the TCP backend's recv() copy bytes (rep movsb).  A
 * CI run in the SoftRoCE VM (TCG) dropped a stale gradient in a sync run
 * with R = W, which is what a worker does that read a new token with the
 * old version (inferred, not observed directly: docs/protocol.md Q3).  A
 * reader that sees the two words disagree has caught a write half-done and
 * reads again; a byte-wise mix of an old and a new message never passes (a
 * byte that differs is new in one word and old in the other, for any copy
 * that writes one word before the other, forward or backward; not for one
 * interleaving the words byte by byte, which no memcpy or DMA does:
 * tests/cluster/test_mbox.c), and a re-sent equal message changes
 * nothing. */
#define MBOX_BYTES 16
static inline void mbox_pack(uint64_t out[2], uint64_t v)
{
	out[0] = v;
	out[1] = ~v;
}
/* 1 and *v when the mailbox holds a whole message, 0 while one is landing */
static inline int mbox_read(const uint64_t *m, uint64_t *v)
{
	uint64_t a = __atomic_load_n(&m[0], __ATOMIC_ACQUIRE);
	uint64_t b = __atomic_load_n(&m[1], __ATOMIC_ACQUIRE);
	if (a != ~b)
		return 0;
	*v = a;
	return 1;
}

static inline size_t shard_pad(size_t nfloats) { return (nfloats + 15) & ~(size_t)15; }
/* bytes of one parameter buffer: 64 B version header + padded floats */
static inline size_t buf_bytes(size_t nfloats) { return 64 + shard_pad(nfloats) * sizeof(float); }
static inline size_t buf_off(size_t nfloats, uint64_t version) { return 64 + (version & 1) * buf_bytes(nfloats); }
static inline size_t params_bytes(size_t nfloats) { return 64 + 2 * buf_bytes(nfloats); }
static inline size_t slot_bytes(size_t nfloats) { return 64 + shard_pad(nfloats) * sizeof(float); }
/* COUNTERS: ready_seq[W], then done[W] (worker i adds 1 to done[i] when
 * it finished; the ps tells a finished worker from one that died by it) */
static inline size_t counters_bytes(int nworkers) { return 2 * (size_t)nworkers * 8; }
static inline size_t counters_done_idx(int nworkers, int i) { return (size_t)nworkers + (size_t)i; }

/* The publication protocol of a parameter buffer (the seqlock half of the
 * double buffering, docs/protocol.md Q4).  begin: mark buffer busy with the
 * version about to be written; end: store the version and publish it in the
 * header.  Readers accept a copy only if the buffer's version word, READ
 * fenced after the payload, equals the version they asked for. */
static inline void rdmaps_buf_begin(uint64_t *vw, uint64_t nv)
{
	__atomic_store_n(vw, RDMAPS_BUSY | nv, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
}
static inline void rdmaps_buf_end(uint64_t *vw, uint64_t *current_version, uint64_t nv)
{
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	__atomic_store_n(vw, nv, __ATOMIC_RELEASE);
	__atomic_store_n(current_version, nv, __ATOMIC_RELEASE);
}

/* The model and its placement, computed identically by every task. */
struct rdmaps_layout {
	struct rdm_model *model;      /* owned */
	struct rdmaps_placement place;
	size_t nparams;
	uint64_t hash;     /* model, placement, workers, sync, R: checkpoints carry it */
	uint64_t state_hash; /* model, floats, placement: what a checkpoint's state
			      * depends on; a job resumes a checkpoint of the same one */
	uint64_t job_hash; /* hash + --learning_rate: a worker's hello must match the ps's */
};
int rdmaps_layout_new(const struct rdmaps_job *j, int max_batch, struct rdmaps_layout *l);
/* One step of the hashes of a layout (boost's hash_combine, 64-bit): h
 * mixed with v.  layout.c builds hash, state_hash and job_hash with it. */
static inline uint64_t rdmaps_hash_mix(uint64_t h, uint64_t v)
{
	return h ^ (v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2));
}

/* The hello's hash for ps task `ps`: job_hash and the shard the worker means.
 * A worker whose --ps_hosts lists the ps tasks in another order (or names
 * one ps twice) reaches a ps that is not the shard it means: refused, where
 * it used to train on the wrong shard's bytes. */
static inline uint64_t rdmaps_hello_hash(const struct rdmaps_layout *l, int ps)
{
	uint64_t h = l->job_hash;
	return rdmaps_hash_mix(h, (uint64_t)ps + 1);
}
void rdmaps_layout_free(struct rdmaps_layout *l);
/* replicas_to_aggregate in effect */
static inline int job_replicas(const struct rdmaps_job *j) { return j->replicas > 0 ? j->replicas : j->nworkers; }

/* Spin with backoff for the shared 2-core case: pause, then yield, then sleep. */
void rdmaps_backoff(unsigned *spins);
/* Seconds on CLOCK_MONOTONIC: every deadline, timeout and duration.  Until
 * 2026-12-07 this was the wall clock, and a step of it (NTP, `date -s`)
 * passed or stretched every deadline held (tests/train/e2e.sh clock_step). */
double rdmaps_now(void);
/* Seconds on CLOCK_REALTIME: only for times printed or written for other
 * processes and hosts to compare (step lines, "Training begins @", the
 * --metrics "t", snapshots), as TensorFlow prints time.time(). */
double rdmaps_wall(void);

#endif
