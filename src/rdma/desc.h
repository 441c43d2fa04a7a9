/* Remote-memory descriptors and the grants table, as they travel on the wire.
 *
 * Descriptor: 40 bytes, little-endian, versioned (never a raw C struct):
 *    0  u16 version (RT_DESC_VERSION = 1)
 *    2  u16 rights  (enum rt_rights bits; nonzero, only READ|WRITE|ATOMIC)
 *    4  u32 id      (< RT_MAX_GRANTS)
 *    8  u64 addr    (target virtual address; TCP: informational)
 *   16  u64 len     (nonzero; addr + len must not overflow)
 *   24  u32 rkey    (verbs rkey; TCP: 0)
 *   28  u32 reserved, must be 0
 *   32  u64 reserved, must be 0
 *
 * Table message: 8-byte header then count descriptors, nothing after:
 *    0  "RDTB"  4 u16 version (1)  6 u16 count (<= RT_MAX_GRANTS)
 * Ids in one table are unique.  Both backends send exactly this table. */
#ifndef RDMAPS_RT_DESC_H
#define RDMAPS_RT_DESC_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

#define RT_DESC_VERSION 1u
#define RT_DESC_LEN 40
#define RT_TABLE_VERSION 1u
#define RT_TABLE_HDR_LEN 8
#define RT_TABLE_MAX_LEN (RT_TABLE_HDR_LEN + RT_MAX_GRANTS * RT_DESC_LEN)
#define RT_RIGHTS_ALL (RT_RIGHT_READ | RT_RIGHT_WRITE | RT_RIGHT_ATOMIC)

/* Encode one descriptor.  RDMAPS_E_INVAL if r would not decode. */
int rt_desc_encode(const struct rt_remote *r, uint8_t out[RT_DESC_LEN]);
/* Decode and validate one descriptor; RDMAPS_E_PROTO on garbage. */
int rt_desc_decode(const uint8_t in[RT_DESC_LEN], struct rt_remote *r);

/* Encode n descriptors as a table into buf (cap bytes); *len = bytes used.
 * RDMAPS_E_INVAL for a bad entry, n out of range or cap too small. */
int rt_desc_table_encode(const struct rt_remote *d, int n, void *buf, size_t cap,
			 size_t *len);
/* Decode a table of exactly len bytes into out[0..max); *n = count.
 * RDMAPS_E_PROTO on bad magic/version/length/entries or duplicate ids. */
int rt_desc_table_decode(const void *buf, size_t len, struct rt_remote *out, int max,
			 int *n);

/* Little-endian helpers (shared with the TCP wire code). */
static inline void rt_put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v; p[1] = (uint8_t)(v >> 8); }
static inline void rt_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void rt_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline uint16_t rt_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t rt_get32(const uint8_t *p)
{
	uint32_t v = 0;

	for (int i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}
static inline uint64_t rt_get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

#endif
