/* One figure of /proc/self/status (VmHWM, RssFile, ...), in kB; -1 when
 * the file or the key is missing. For benchmarks' statistics and tests. */
#ifndef HM_COMMON_PROC_STATUS_H
#define HM_COMMON_PROC_STATUS_H

long hm_proc_status_kb(const char *key);

#endif
