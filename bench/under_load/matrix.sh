# Section "matrix" of bench/under_load.sh: a healthy 4-node fe lab matrix
# (every link alike), one run per round and condition: everything it names
# (a slow node, a slow link, an asymmetric pair, a lossy link) is a false
# finding; target nothing named, idle and loaded. Printed per run: what it
# measured against its budget (and the stream size fitted to it), whether the rounds were host-bound, the
# findings left unconfirmed (a re-measure withdrew them or none could be
# made: nothing is named from them) and what was named.
# Budget: MATRIX_BUDGET (default 12s) and the lab's set-up, about 20 s a run.

matrix_case() { # $1 = idle|busy, $2 = round
  local out="$work/matrix/$1-$2.json"
  mkdir -p "$work/matrix"
  note_load "$out"
  "$BIN" matrix --lab fe --nodes 4 --budget "${MATRIX_BUDGET:-12s}" --quiet --json "$out" \
    >/dev/null 2>"$out.err" || echo "# matrix $1 round $2 failed: $(tail -1 "$out.err")"
  note_load "$out"
}

matrix_report() {
  echo "## matrix: a healthy 4-node fe lab (budget ${MATRIX_BUDGET:-12s})"
  python3 - "$work/matrix" "$ROUNDS" <<'PY'
import json, os, sys
work, rounds = sys.argv[1], int(sys.argv[2])
named_runs = {}
for r in range(1, rounds + 1):
    for l in ("idle", "busy"):
        p = f"{work}/{l}-{r}.json"
        try:
            m = json.load(open(p))
        except (OSError, ValueError) as e:
            print(f"{l} round {r}: no result ({e})")
            continue
        la = "-".join(open(p + ".load").read().split())
        a, names = m["analysis"], [n["name"] for n in m["nodes"]]
        found = [f"slow node {names[s['node']]} ({s['metric']})" for s in a["slow_nodes"]]
        found += [f"slow link {names[c['from']]}->{names[c['to']]} ({c['metric']})"
                  for c in a["outlier_cells"] if not c["explained_by_node"]]
        found += [f"asymmetric {names[q['a']]}<->{names[q['b']]} ({q['metric']})"
                  for q in a["asymmetric_pairs"]]
        found += [f"lossy {names[q['a']]}<->{names[q['b']]}" for q in a.get("lossy_links", [])]
        named_runs.setdefault(l, []).append(len(found))
        budget = m.get("budget_s") or float("nan")
        hb = a.get("host_bound")
        print(f"{l:<4} round {r}: measured {m['rounds_s']:.1f} s of {budget:.0f} s "
              f"({m['bandwidth_bytes'] >> 10} KiB stream), "
              f"host-bound {'%.2f of the links' % hb['link_share'] if hb else 'no'}, "
              f"unconfirmed {a.get('unconfirmed', 0)}, named: {', '.join(found) or 'nothing'}; load {la}")
for l, v in sorted(named_runs.items()):
    print(f"matrix {l}: named nothing in {v.count(0)} of {len(v)} runs (target: every one)")
PY
}
