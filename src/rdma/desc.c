/* Descriptor and grants-table encoding (see desc.h for the layout). */
#include <string.h>

#include "desc.h"

static int desc_valid(uint32_t id, unsigned rights, uint64_t addr, uint64_t len)
{
	if (id >= RT_MAX_GRANTS)
		return 0;
	if (rights == 0 || (rights & ~(unsigned)RT_RIGHTS_ALL))
		return 0;
	if (len == 0 || addr + len < addr)
		return 0;
	return 1;
}

int rt_desc_encode(const struct rt_remote *r, uint8_t out[RT_DESC_LEN])
{
	if (!r || !out || !desc_valid(r->id, r->rights, r->addr, r->len))
		return RDMAPS_E_INVAL;
	memset(out, 0, RT_DESC_LEN);
	rt_put16(out + 0, RT_DESC_VERSION);
	rt_put16(out + 2, (uint16_t)r->rights);
	rt_put32(out + 4, r->id);
	rt_put64(out + 8, r->addr);
	rt_put64(out + 16, r->len);
	rt_put32(out + 24, r->rkey);
	return RDMAPS_OK;
}

int rt_desc_decode(const uint8_t in[RT_DESC_LEN], struct rt_remote *r)
{
	struct rt_remote d;

	if (!in || !r)
		return RDMAPS_E_INVAL;
	if (rt_get16(in) != RT_DESC_VERSION || rt_get32(in + 28) != 0 || rt_get64(in + 32) != 0)
		return RDMAPS_E_PROTO;
	d.rights = rt_get16(in + 2);
	d.id = rt_get32(in + 4);
	d.addr = rt_get64(in + 8);
	d.len = rt_get64(in + 16);
	d.rkey = rt_get32(in + 24);
	if (!desc_valid(d.id, d.rights, d.addr, d.len))
		return RDMAPS_E_PROTO;
	*r = d;
	return RDMAPS_OK;
}

int rt_desc_table_encode(const struct rt_remote *d, int n, void *buf, size_t cap,
			 size_t *len)
{
	uint8_t *p = buf;
	size_t need;

	if ((!d && n) || !buf || !len || n < 0 || n > RT_MAX_GRANTS)
		return RDMAPS_E_INVAL;
	need = RT_TABLE_HDR_LEN + (size_t)n * RT_DESC_LEN;
	if (cap < need)
		return RDMAPS_E_INVAL;
	memcpy(p, "RDTB", 4);
	rt_put16(p + 4, RT_TABLE_VERSION);
	rt_put16(p + 6, (uint16_t)n);
	for (int i = 0; i < n; i++) {
		for (int j = 0; j < i; j++)
			if (d[j].id == d[i].id)
				return RDMAPS_E_INVAL;
		int rc = rt_desc_encode(&d[i], p + RT_TABLE_HDR_LEN + (size_t)i * RT_DESC_LEN);

		if (rc)
			return rc;
	}
	*len = need;
	return RDMAPS_OK;
}

int rt_desc_table_decode(const void *buf, size_t len, struct rt_remote *out, int max,
			 int *n)
{
	const uint8_t *p = buf;
	unsigned seen = 0;
	unsigned count;

	if (!buf || !out || !n || max < 0)
		return RDMAPS_E_INVAL;
	if (len < RT_TABLE_HDR_LEN || memcmp(p, "RDTB", 4) != 0 ||
	    rt_get16(p + 4) != RT_TABLE_VERSION)
		return RDMAPS_E_PROTO;
	count = rt_get16(p + 6);
	if (count > RT_MAX_GRANTS || (int)count > max ||
	    len != RT_TABLE_HDR_LEN + (size_t)count * RT_DESC_LEN)
		return RDMAPS_E_PROTO;
	for (unsigned i = 0; i < count; i++) {
		int rc = rt_desc_decode(p + RT_TABLE_HDR_LEN + (size_t)i * RT_DESC_LEN, &out[i]);

		if (rc)
			return rc;
		if (seen & (1u << out[i].id))
			return RDMAPS_E_PROTO;
		seen |= 1u << out[i].id;
	}
	*n = (int)count;
	return RDMAPS_OK;
}
