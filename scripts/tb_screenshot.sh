#!/bin/bash
# A screenshot of TensorBoard (issue 52): a real TensorBoard server on LOGDIR, read by headless Chromium,
# written to OUT (PNG). LOGDIR holds the runs to overlay (e.g. symlinks to runs/<keep>/tb and
# runs/<baseline>/tb); TAGS is TensorBoard's tag filter (a regex, default: the reward and the eval score).
#   scripts/tb_screenshot.sh LOGDIR OUT.png [TAGS]    (needs chromium; UV="python3 -m uv" without uv on PATH)
set -euo pipefail
logdir=$1; out=$2; tags=${3:-reward_mean$|eval/score}
read -r -a uv <<< "${UV:-uv}"
browser=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$browser" ] || { echo "no chromium on PATH (Debian: apt-get install chromium)" >&2; exit 2; }
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"${uv[@]}" run --no-sync tensorboard --logdir "$logdir" --host 127.0.0.1 --port "$port" > /tmp/tb-shot.log 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 60); do  # until the server lists the runs
  curl -sf "http://127.0.0.1:$port/data/runs" | grep -q '"' && break
  sleep 1
done
query=$(python3 -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$tags")
"$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1600,1000 \
  --virtual-time-budget=20000 --screenshot="$out" "http://127.0.0.1:$port/?tagFilter=$query#timeseries" \
  > /tmp/tb-shot-browser.log 2>&1
echo "wrote $out ($(du -h "$out" | cut -f1)) from TensorBoard on $logdir, tags /$tags/"
