#!/usr/bin/env bash
# A two-node Ray cluster on this machine (one CPU each; the head started from the swarm's checkout DIR, the
# second node from a second clone of the same commit) and a 2-agent A/A swarm whose trials run their seeds
# on it (`run.py --ray`). Usage: ray.sh DIR MINUTES   (after commands.sh DIR: its setup and changes)
set -euo pipefail
dir=$1; minutes=$2
cd "$dir"
commit=$(git rev-parse HEAD)
node_b="$dir-node-b"
[ -d "$node_b" ] || { git clone -q /work/main "$node_b" && git -C "$node_b" checkout -q "$commit"; }
(cd "$node_b" && UV_PROJECT_ENVIRONMENT="$dir/.venv" uv run --no-sync python -c "print('node b checkout ready')")
port=$(python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1',0)); print(s.getsockname()[1])")
raytmp=$(mktemp -d /tmp/rt-XXXX)
ray="$dir/.venv/bin/ray"
env -u PYTHONDONTWRITEBYTECODE AUTORL_ROOT="$dir" AUTORL_STUDY_RAY=head setsid "$ray" start --block --head \
  --port "$port" --num-cpus 1 --include-dashboard false --temp-dir "$raytmp" --disable-usage-stats \
  > ray-head.log 2>&1 &
until grep -q "Ray runtime started" ray-head.log; do sleep 1; done
env -u PYTHONDONTWRITEBYTECODE AUTORL_ROOT="$node_b" AUTORL_STUDY_RAY=worker RAY_AUTH_MODE=token setsid "$ray" start --block \
  --address "127.0.0.1:$port" --num-cpus 1 --disable-usage-stats > ray-worker.log 2>&1 &
until grep -q "Ray runtime started" ray-worker.log; do sleep 1; done
echo "=== ray segment: 2 agents, $minutes min on 127.0.0.1:$port, $(date -u +%FT%TZ)"
agent="uv run python -m autorl.commands.standin --changes $dir/.autorl/changes.toml --track classic --prompt {prompt} -- --ray 127.0.0.1:$port"
hours=$(python3 -c "print($minutes / 60)")
uv run autorl swarm --agents 2 --agent "$agent" --hours "$hours" > swarm-ray.log 2>&1 || true
sed -n '/^---$/,$p' swarm-ray.log
# end the two nodes by their marker (never `ray stop`: it ends every Ray process of the user)
for p in $(grep -al "AUTORL_STUDY_RAY=" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3); do kill -9 "$p" 2>/dev/null || true; done
sleep 3; rm -rf "$raytmp"
ls .autorl/claims 2>/dev/null | wc -l | xargs echo "claims left:"
