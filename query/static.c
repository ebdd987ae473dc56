/* The web viewer's files, embedded at build time (hm_web.h from
 * web_static/ by embed_web.cmake). Looking a path up in that table is the
 * whole of static serving: no file system is touched, so no request can
 * reach a file outside web_static. */
#include "query_int.h"

#include <string.h>

#include "hm_web.h"

static const char *mime_of(const char *path)
{
    static const char *const map[][2] = {
        {".html", "text/html; charset=utf-8"},     {".js", "text/javascript; charset=utf-8"},
        {".css", "text/css; charset=utf-8"},       {".svg", "image/svg+xml"},
    };
    const char *dot = strrchr(path, '.');

    for (size_t i = 0; dot && i < sizeof map / sizeof *map; i++)
        if (!strcmp(dot, map[i][0]))
            return map[i][1];
    return "application/octet-stream";
}

bool qry_asset_find(const char *path, struct qry_asset *out)
{
    if (!strcmp(path, "/"))
        path = "/index.html";
    for (const struct hm_web_file *f = hm_web_files; f->path; f++) {
        if (strcmp(f->path, path) != 0)
            continue;
        *out = (struct qry_asset){f->path, mime_of(f->path), f->data, f->len};
        return true;
    }
    return false;
}
