# Sourced by bench/under_load.sh: the competing load and what every
# section shares. The load is Debian's `stress-ng --cpu 2` (one hog per
# CPU of the 2-vCPU development VM), bounded by its own --timeout and
# stopped by its process id, never by name.
load_pid=

# start_load SECONDS: the hogs, for at most SECONDS, then 2 s to settle.
start_load() {
  stress-ng --cpu 2 --timeout "${1}s" >/dev/null 2>&1 &
  load_pid=$!
  sleep 2
}

stop_load() {
  if [ -n "$load_pid" ]; then
    kill "$load_pid" 2>/dev/null || true
    wait "$load_pid" 2>/dev/null || true
    load_pid=
  fi
}

# The one-minute load average, printed beside every figure.
loadavg() { cut -d' ' -f1 /proc/loadavg; }

# note FILE: the load average now, appended (before and after a case).
note_load() { loadavg >>"$1.load"; }
