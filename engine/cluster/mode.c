/* Which training mode a job asks for: the one place that names them all. */
#include "engine/cluster/mode.h"

const coordinator_mode *mode_for_job(const job_config *cfg)
{
    return cfg->sync_every ? &averaging_mode : &sync_mode;
}
