/* rdmaps: the live progress line (progress.h). */
#include "worker/progress.h"

#include <string.h>

void rdmaps_progress_init(struct rdmaps_progress *p, FILE *out, long target_steps)
{
	memset(p, 0, sizeof(*p));
	p->out = out;
	p->target = target_steps;
	p->g_first = -1;
}

void rdmaps_progress_format(const struct rdmaps_progress *p, double now, char *buf, size_t len)
{
	double dt = now - p->t_first;
	long dg = p->g - p->g_first;
	double rate = (p->g_first >= 0 && dt > 0 && dg > 0) ? dg / dt : 0;
	int n = snprintf(buf, len, "global step %ld/%ld | ", p->g, p->target);
	if (n < 0 || (size_t)n >= len)
		return;
	if (rate > 0)
		n += snprintf(buf + n, len - (size_t)n, "%.1f steps/s | loss %.4g | ETA %.1f s", rate, p->loss,
			      p->g >= p->target ? 0.0 : (double)(p->target - p->g) / rate);
	else
		n += snprintf(buf + n, len - (size_t)n, "- steps/s | loss %.4g | ETA -", p->loss);
}

static void draw(struct rdmaps_progress *p, double now)
{
	char line[160];
	rdmaps_progress_format(p, now, line, sizeof(line));
	fprintf(p->out, "\r\033[K%s", line);
	fflush(p->out);
	p->shown = 1;
	p->dirty = 0;
	p->t_draw = now;
}

void rdmaps_progress_update(struct rdmaps_progress *p, long g, double loss, double now)
{
	if (p->g_first < 0) {
		p->g_first = g;
		p->t_first = now;
	}
	if (g > p->g)
		p->g = g;
	p->loss = loss;
	p->dirty = 1;
	p->t_last = now;
	if (!p->shown || now - p->t_draw >= 0.1 || p->g >= p->target)
		draw(p, now);
}

void rdmaps_progress_clear(struct rdmaps_progress *p)
{
	if (!p->shown)
		return;
	fputs("\r\033[K", p->out);
	p->shown = 0;
	p->t_draw = 0;
}

void rdmaps_progress_end(struct rdmaps_progress *p)
{
	if (p->dirty)
		draw(p, p->t_last); /* the newest state, not the last one drawn */
	if (!p->shown)
		return;
	fputc('\n', p->out);
	fflush(p->out);
	p->shown = 0;
}
