#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Merges a result file of some of a scenario's modes (scripts/bench --mode) into the
scenario's earlier result file: the new modes' runs replace those of the same modes,
the others' stay, and "parts" says which modes came from which guest boot (the report
says so beside the table: modes of different boots compare with care).

    merge.py OLD NEW OUT"""
import json
import sys


def part(doc, modes):
    return {"date": doc["date"], "kernel": doc["kernel"], "accel": doc.get("accel", ""),
            "seconds": doc.get("seconds"), "modes": sorted(modes)}


def merge(old, new):
    out = dict(new)
    new_modes = set(new["runs"])
    kept = {m: runs for m, runs in old["runs"].items() if m not in new_modes}
    out["runs"] = {**kept, **new["runs"]}
    # The earlier boot's description, less the modes measured again.
    parts = [dict(p, modes=[m for m in p["modes"] if m not in new_modes])
             for p in old.get("parts", [part(old, old["runs"])])]
    out["parts"] = [part(new, new_modes)] + [p for p in parts if p["modes"]]
    out["errors"] = new.get("errors", []) + [f"(earlier boot) {e}" for e in old.get("errors", [])
                                            if e.split()[0] in kept]
    if old.get("left_out") and not new.get("left_out") and old["left_out"].split(":")[0] not in new_modes:
        out["left_out"] = old["left_out"]
    return out


if __name__ == "__main__":
    with open(sys.argv[1]) as f:
        old = json.load(f)
    with open(sys.argv[2]) as f:
        new = json.load(f)
    with open(sys.argv[3], "w") as f:
        json.dump(merge(old, new), f)
