# SPDX-License-Identifier: Apache-2.0
"""The per-phase split of boots' state.json files, for the benches that print it
(boot_bench.sh, rails_boot_bench.sh): each phase's median duration, with the app's part (its
command from exec to exit, or the server until it answered) and ours (the rest: state.json,
cgroups, spawning, the supervisor, the checks after the server answered)."""
import statistics


def median(values):
    return statistics.median(values) if values else 0


def phase_parts(runs):
    """One "name D (app A, ours O)" per phase of runs[0], in order, over all runs (parsed
    state.json objects); phases the engine runs alone have no app part."""
    parts = []
    for name in [s["name"] for s in runs[0]["steps"]]:
        ph = [s for r in runs for s in r["steps"] if s["name"] == name]
        dur = median([s["duration_ms"] or 0 for s in ph])
        ours = median([(s["duration_ms"] or 0) - (s["app_ms"] or 0) for s in ph])
        app = [s["app_ms"] for s in ph if s["app_ms"] is not None]
        parts.append("%s %g" % (name, dur) +
                     (" (app %g, ours %g)" % (median(app), ours) if app else ""))
    return parts
