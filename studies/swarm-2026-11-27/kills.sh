#!/usr/bin/env bash
# Nothing lost: a 2-agent A/A swarm in DIR (after commands.sh), and mid-run: SIGKILL an agent (its stand-in
# process; its trial goes on), SIGTERM a trial (its run.py: a user's `kill`), then SIGINT the swarm itself.
# Then every trial that trained must have its row and no claim may be left. Usage: kills.sh DIR
set -uo pipefail
dir=$1; cd "$dir"
agent="uv run python -m autorl.commands.standin --changes $dir/.autorl/changes.toml --track classic --prompt {prompt} --"
echo "=== kill segment: 2 agents, $(date -u +%FT%TZ)"
uv run autorl swarm --agents 2 --agent "$agent" --hours 1 > swarm-kills.log 2>&1 &
swarm=$!
runpy() { pgrep -f "^/\S*python\S* /\S*/run.py --track classic --description" | head -1; }
standin() { pgrep -f "^/\S*python\S* -m autorl.commands.standin --changes" | tail -1; }
sleep 60; until [ -n "$(runpy)" ]; do sleep 2; done
a=$(standin); echo "$(date -u +%T) SIGKILL the stand-in agent pid $a (its trial trains on)"; kill -9 "$a"
sleep 50; until [ -n "$(runpy)" ]; do sleep 2; done
t=$(runpy); echo "$(date -u +%T) SIGTERM the trial pid $t ($(tr '\0' ' ' < /proc/$t/cmdline | cut -c1-120))"; kill -TERM "$t"
sleep 50; until [ -n "$(runpy)" ]; do sleep 2; done; sleep 5
echo "$(date -u +%T) SIGINT the swarm pid $swarm"; kill -INT "$swarm"
wait "$swarm"; echo "swarm exit: $?"
sed -n '/^---$/,$p' swarm-kills.log
uv run python /tmp/swarmstudy/nothing_lost.py
