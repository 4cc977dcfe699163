/*
 * Shared between the files of the model (model.c: runs, series, ranks;
 * model_samples.c: sample caches; model_alerts.c: alerts). Not for
 * panels.
 */
#ifndef TUI_MODEL_PRIV_H
#define TUI_MODEL_PRIV_H

#include "tui/model.h"

/* Bring the caches of the series asked for up to date. Returns 0 or a
 * store_err. */
int model_samples_read(model *m);
/* Free caches not asked for in a while. */
void model_samples_evict(model *m);
void model_cache_free(model_samples *c);

/* Fold in alerts after m->alert_seq. Returns 0 or a store_err. */
int model_alerts_read(model *m);
/* Recompute each metric's and rank's alert state, and the firing
 * counts, from m->alerts. */
void model_alerts_apply(model *m);

#endif /* TUI_MODEL_PRIV_H */
