#include "engine/cli/nodes_before.h"

#include "common/input_file.h"
#include "common/json_parse.h"

#include <stdlib.h>
#include <string.h>

#define SUMMARY_MAX (256 << 20)
#define NAMED_MAX 8   /* nodes named on the line; the rest counted */

int nodes_before_say(const char *summary_path, FILE *out)
{
    char why[400];
    size_t len;
    char *text = input_read_all(summary_path, SUMMARY_MAX, "run summary", &len, why, sizeof why);
    json_value *summary = text ? json_parse(text, len, why, sizeof why) : NULL;
    free(text);
    const json_value *nodes = summary ? json_get(summary, "cluster.nodes") : NULL;
    if (!nodes || nodes->type != JSON_ARRAY) {
        json_free(summary);
        return -1;   /* it ran alone, or never saved: nothing to expect */
    }
    int n = 0;
    char names[NAMED_MAX * 160] = "";
    for (int i = 0; i < nodes->n; i++) {
        const json_value *node = &nodes->items[i];
        if (json_member(node, "lost") && json_member(node, "lost")->type != JSON_NULL)
            continue;   /* lost before the stop */
        if (n++ < NAMED_MAX)
            snprintf(names + strlen(names), sizeof names - strlen(names), "%s%.60s (%.80s)",
                     n > 1 ? ", " : "", json_str(json_member(node, "address"), "?"),
                     json_str(json_member(node, "host"), "?"));
    }
    if (n)
        fprintf(out, "cluster: when it stopped, %d node%s %s training with it: %s%s; they rejoin "
                "if they still wait (frugal join --linger), and --wait-for %d waits for them\n",
                n, n > 1 ? "s" : "", n > 1 ? "were" : "was", names, n > NAMED_MAX ? ", ..." : "", n);
    else
        fprintf(out, "cluster: when it stopped, no node was training with it\n");
    json_free(summary);
    return n;
}
