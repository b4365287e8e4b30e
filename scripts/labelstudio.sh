#!/usr/bin/env bash
# A local Label Studio for the review loop (audit/review/push.py, pull.py, status.py), loopback only.
#
#   scripts/labelstudio.sh start  [--data-dir DIR] [--port P] [--postgres] [--timeout S]
#   scripts/labelstudio.sh stop   [--data-dir DIR]
#   scripts/labelstudio.sh status [--data-dir DIR]
#
# DIR defaults to data/labelstudio/default and P to 8080. A new or empty DIR starts as a
# copy of a migrated template (data/labelstudio/template, built once: the first start runs
# ~400 migrations, 30-90 s; a copy starts in 4-12 s); an existing DIR is reused as it is.
# --postgres keeps the database in a PostgreSQL 15 cluster of its own under DIR/postgres
# (initdb + pg_ctl as the postgres user, 127.0.0.1 on a free port) instead of SQLite.
#
# Credentials: the admin is LABEL_STUDIO_USERNAME (default admin@example.com); its password
# and API token come from LABEL_STUDIO_PASSWORD / LABEL_STUDIO_API_KEY when set, else from
# .labelstudio.env (gitignored, mode 600), which the first start creates with random values.
# They reach the server through its environment only, never its command line or output.
# Label Studio applies the token only when it creates the admin, i.e. on a new DIR.
#
# start prints LABEL_STUDIO_URL=http://127.0.0.1:P; DIR/server.url holds it while running.
# Exit codes: 0 ok (status: running), 1 failure, 2 usage, 3 status: not running.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BASE=$ROOT/data/labelstudio
SECRETS=$ROOT/.labelstudio.env

usage() { sed -n '4,6p' "$0" | sed 's/^# *//' >&2; exit 2; }
die() { echo "labelstudio.sh: $*" >&2; exit 1; }

command=${1:-}; [ $# -gt 0 ] && shift
data_dir=$BASE/default; port=${LABEL_STUDIO_PORT:-8080}; postgres=0; timeout=240
while [ $# -gt 0 ]; do
  case $1 in
    --data-dir) [ $# -ge 2 ] || usage; data_dir=$2; shift 2 ;;
    --port) [ $# -ge 2 ] || usage; port=$2; shift 2 ;;
    --postgres) postgres=1; shift ;;
    --timeout) [ $# -ge 2 ] || usage; timeout=$2; shift 2 ;;
    *) usage ;;
  esac
done
case $command in start|stop|status) ;; *) usage ;; esac
[[ $port =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "bad port $port"
[[ $timeout =~ ^[0-9]+$ ]] || die "bad timeout $timeout"
mkdir -p "$(dirname "$data_dir")"
data_dir=$(cd "$(dirname "$data_dir")" && pwd)/$(basename "$data_dir")
pid_file=$data_dir/server.pid
url_file=$data_dir/server.url
log_file=$data_dir/server.log

# The label-studio in LABEL_STUDIO_BIN, else the project's .venv, else on PATH.
ls_bin=${LABEL_STUDIO_BIN:-}
if [ -z "$ls_bin" ]; then
  if [ -x "$ROOT/.venv/bin/label-studio" ]; then ls_bin=$ROOT/.venv/bin/label-studio
  else ls_bin=$(command -v label-studio || true); fi
fi
python=$(dirname "${ls_bin:-/nonexistent}")/python
[ -x "$python" ] || python=$(command -v python3)

# ----------------------------------------------------------------------------- processes

server_pid() {  # the pid of DIR's running server, or nothing
  local pid
  pid=$(cat "$pid_file" 2>/dev/null || true)
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  # A recycled pid is not ours: the process must be label-studio started on this port.
  # The braces put the redirection itself under 2>/dev/null: after an unclean death the
  # pid is gone and /proc/$pid/cmdline with it.
  if { tr '\0' ' ' < "/proc/$pid/cmdline"; } 2>/dev/null | grep -q "label-studio start"; then
    echo "$pid"
  fi
}

port_busy() {  # is anything listening on 127.0.0.1:$1 (or holding it)?
  "$python" - "$1" <<'EOF'
import socket, sys
port = int(sys.argv[1])
with socket.socket() as probe:
    probe.settimeout(1)
    if probe.connect_ex(("127.0.0.1", port)) == 0:
        sys.exit(0)
with socket.socket() as probe:   # as the server binds: TIME_WAIT leftovers do not count
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind(("127.0.0.1", port))
    except OSError:
        sys.exit(0)
sys.exit(1)
EOF
}

free_port() {  # a free loopback port chosen by the kernel
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

health() {  # prints UP when GET /health says {"status": "UP"}
  curl -fsS --max-time 3 "$1/health" 2>/dev/null | "$python" -c \
    'import json, sys; print("UP" if json.load(sys.stdin).get("status") == "UP" else "")' \
    2>/dev/null || true
}

# ----------------------------------------------------------------------------- credentials

secret() {  # the value of KEY in .labelstudio.env, or nothing
  [ -f "$SECRETS" ] && sed -n "s/^$1=//p" "$SECRETS" | tail -n 1 || true
}

random_hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

load_credentials() {
  username=${LABEL_STUDIO_USERNAME:-$(secret LABEL_STUDIO_USERNAME)}
  username=${username:-admin@example.com}
  token=${LABEL_STUDIO_API_KEY:-$(secret LABEL_STUDIO_API_KEY)}
  password=${LABEL_STUDIO_PASSWORD:-$(secret LABEL_STUDIO_PASSWORD)}
  if [ -z "$token" ] || [ -z "$password" ]; then
    # First start: keep what the file has, fill in the rest at random.
    local file_token file_password
    file_token=$(secret LABEL_STUDIO_API_KEY); file_password=$(secret LABEL_STUDIO_PASSWORD)
    (umask 077
     printf '%s\n' "# Local Label Studio admin (scripts/labelstudio.sh). Secret: never commit." \
       "LABEL_STUDIO_USERNAME=$username" \
       "LABEL_STUDIO_PASSWORD=${file_password:-$(random_hex 12)}" \
       "LABEL_STUDIO_API_KEY=${file_token:-$(random_hex 20)}" > "$SECRETS.new")
    chmod 600 "$SECRETS.new"; mv "$SECRETS.new" "$SECRETS"
    echo "labelstudio.sh: wrote local credentials to .labelstudio.env (mode 600)" >&2
    token=${token:-$(secret LABEL_STUDIO_API_KEY)}
    password=${password:-$(secret LABEL_STUDIO_PASSWORD)}
  fi
  # Token keys are at most 40 characters in Label Studio's database; > 5 to be applied.
  [[ $token =~ ^[A-Za-z0-9]{6,40}$ ]] \
    || die "the API token must be 6-40 letters or digits (LABEL_STUDIO_API_KEY or .labelstudio.env)"
  fingerprint=$(printf '%s\n%s\n%s\n' "$username" "$password" "$token" | sha256sum | cut -c1-32)
}

check_token() {  # does the server accept our token? (the token travels in the environment)
  TOKEN=$token "$python" - "$1" <<'EOF'
import os, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1] + "/api/current-user/whoami",
                                 headers={"Authorization": "Token " + os.environ["TOKEN"]})
try:
    urllib.request.urlopen(request, timeout=10).read()
except urllib.error.HTTPError as error:
    sys.exit(f"the server rejects the API token (HTTP {error.code})")
EOF
}

# ----------------------------------------------------------------------------- postgres

pg_dir=$data_dir/postgres
pg_bin() {
  local found
  found=$(command -v initdb 2>/dev/null || ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null | sort -V | tail -n 1 || true)
  [ -n "$found" ] || die "--postgres: no PostgreSQL (initdb) on this machine"
  dirname "$(readlink -f "$found")"
}
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }

start_postgres() {
  local bin pg_port pg_password
  bin=$(pg_bin)
  mkdir -p "$data_dir" && chmod 711 "$data_dir"   # postgres must traverse DIR
  if [ ! -f "$pg_dir/postgres.env" ]; then
    rm -rf "$pg_dir"; mkdir -p "$pg_dir/run"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$pg_dir"
    chmod 700 "$pg_dir"
    pg_port=$(free_port); pg_password=$(random_hex 16)
    as_pg "$bin/initdb" -D "$pg_dir/data" -U postgres -E UTF8 --locale=C.UTF-8 \
      --auth-local=peer --auth-host=scram-sha-256 >"$pg_dir/initdb.log" 2>&1 \
      || { cat "$pg_dir/initdb.log" >&2; die "--postgres: initdb failed"; }
    pg_ctl_start "$bin" "$pg_port"
    # The password goes in on stdin, not on a command line.
    as_pg "$bin/psql" -q -v ON_ERROR_STOP=1 -h "$pg_dir/run" -p "$pg_port" -U postgres \
      -d postgres >/dev/null <<SQL
CREATE ROLE labelstudio LOGIN PASSWORD '$pg_password';
CREATE DATABASE labelstudio OWNER labelstudio;
SQL
    (umask 077; printf 'POSTGRE_PORT=%s\nPOSTGRE_PASSWORD=%s\n' "$pg_port" "$pg_password" \
      > "$pg_dir/postgres.env.new")
    mv "$pg_dir/postgres.env.new" "$pg_dir/postgres.env"
  else
    pg_port=$(sed -n 's/^POSTGRE_PORT=//p' "$pg_dir/postgres.env")
    if ! as_pg "$bin/pg_ctl" -D "$pg_dir/data" status >/dev/null 2>&1; then
      port_busy "$pg_port" && die "--postgres: port $pg_port of this data dir's database is busy"
      pg_ctl_start "$bin" "$pg_port"
    fi
  fi
  pg_env=(DJANGO_DB=default POSTGRE_HOST=127.0.0.1 POSTGRE_PORT="$pg_port"
          POSTGRE_NAME=labelstudio POSTGRE_USER=labelstudio
          POSTGRE_PASSWORD="$(sed -n 's/^POSTGRE_PASSWORD=//p' "$pg_dir/postgres.env")")
}

pg_ctl_start() {
  as_pg "$1/pg_ctl" -D "$pg_dir/data" -l "$pg_dir/postgres.log" -w -t 60 \
    -o "-c listen_addresses=127.0.0.1 -p $2 -k $pg_dir/run" start >/dev/null \
    || { tail -n 20 "$pg_dir/postgres.log" >&2; die "--postgres: PostgreSQL did not start"; }
}

stop_postgres() {
  [ -d "$pg_dir/data" ] || return 0
  local bin; bin=$(pg_bin)
  if as_pg "$bin/pg_ctl" -D "$pg_dir/data" status >/dev/null 2>&1; then
    as_pg "$bin/pg_ctl" -D "$pg_dir/data" -m fast -w stop >/dev/null
  fi
}

# ----------------------------------------------------------------------------- server

launch() {  # start label-studio on DIR and PORT in the background; sets pid
  local -a unset=(-u USERNAME -u PASSWORD -u HOST -u PORT -u DEBUG -u LABEL_STUDIO_HOST
                  -u LABEL_STUDIO_API_KEY -u LABEL_STUDIO_URL)
  if [ $postgres = 0 ]; then
    unset+=(-u DJANGO_DB -u LABEL_STUDIO_DJANGO_DB -u POSTGRE_HOST -u POSTGRE_PORT
            -u POSTGRE_NAME -u POSTGRE_USER -u POSTGRE_PASSWORD)
    pg_env=()
  fi
  : > "$log_file"
  # setsid: the server outlives this script and ignores the caller's terminal signals.
  LABEL_STUDIO_BASE_DATA_DIR=$1 LABEL_STUDIO_USERNAME=$username \
  LABEL_STUDIO_PASSWORD=$password LABEL_STUDIO_USER_TOKEN=$token \
  LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN=true LATEST_VERSION_CHECK=false \
  COLLECT_ANALYTICS=false SENTRY_DSN= FRONTEND_SENTRY_DSN= \
    setsid env "${unset[@]}" "${pg_env[@]}" "$ls_bin" start --no-browser \
      --internal-host 127.0.0.1 --port "$2" </dev/null >"$3" 2>&1 &
  pid=$!
}

wait_up() {  # wait for pid to serve /health on PORT; 0 when up
  local url=http://127.0.0.1:$1 deadline=$((SECONDS + timeout))
  while [ $SECONDS -lt $deadline ]; do
    if ! kill -0 "$pid" 2>/dev/null; then
      tail -n 30 "$2" >&2; echo "labelstudio.sh: the server exited during start (log: $2)" >&2
      return 1
    fi
    # The server moves to the next port silently when ours was taken in the meantime.
    if grep -q "WARNING! \*\*\*" "$2"; then
      kill -TERM "$pid" 2>/dev/null || true
      echo "labelstudio.sh: port $1 was taken during start; the server stopped" >&2
      return 1
    fi
    [ "$(health "$url")" = UP ] && return 0
    sleep 1
  done
  kill -TERM "$pid" 2>/dev/null || true
  tail -n 30 "$2" >&2
  echo "labelstudio.sh: no {\"status\": \"UP\"} from $url/health within ${timeout} s" >&2
  return 1
}

terminate() {  # SIGTERM pid, wait up to 30 s, then SIGKILL
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 120); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  echo "labelstudio.sh: pid $pid ignored SIGTERM for 30 s; sending SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
}

build_template() {  # a migrated SQLite data dir for these credentials
  local template=$BASE/template
  [ "$(cat "$template/.credentials.sha256" 2>/dev/null || true)" = "$fingerprint" ] && return 0
  echo "labelstudio.sh: building the migrated template (first start: 30-90 s)" >&2
  local staging port_t
  staging=$(mktemp -d "$BASE/.template.XXXXXX")
  port_t=$(free_port)
  launch "$staging/data" "$port_t" "$staging/server.log"
  if ! wait_up "$port_t" "$staging/server.log"; then
    wait "$pid" 2>/dev/null || true; rm -rf "$staging"; die "could not build the template"
  fi
  terminate "$pid"; wait "$pid" 2>/dev/null || true
  echo "$fingerprint" > "$staging/data/.credentials.sha256"
  rm -rf "$template"; mv "$staging/data" "$template"; rm -rf "$staging"
}

start() {
  [ -n "$ls_bin" ] && [ -x "$ls_bin" ] \
    || die "label-studio is not installed (pip install label-studio; or set LABEL_STUDIO_BIN)"
  local running url=http://127.0.0.1:$port
  running=$(server_pid)
  if [ -n "$running" ]; then
    echo "labelstudio.sh: already running for $data_dir (pid $running)" >&2
    echo "LABEL_STUDIO_URL=$(cat "$url_file")"
    return 0
  fi
  port_busy "$port" && die "port $port is busy: something else listens there (choose --port)"
  load_credentials
  mkdir -p "$BASE"
  local fresh=0
  if [ ! -d "$data_dir" ] || [ -z "$(ls -A "$data_dir" 2>/dev/null)" ]; then fresh=1; fi
  if [ $postgres = 0 ] && [ -d "$data_dir" ] && [ $fresh = 0 ] \
     && [ ! -f "$data_dir/label_studio.sqlite3" ]; then
    [ -f "$data_dir/postgres/postgres.env" ] \
      && die "$data_dir holds a PostgreSQL review server: start it with --postgres"
  fi
  if [ $fresh = 1 ]; then
    mkdir -p "$data_dir"; chmod 700 "$data_dir"
    if [ $postgres = 0 ]; then
      ( flock 9; build_template ) 9>"$BASE/.template.lock"
      cp -a "$BASE/template/." "$data_dir/"
    else
      echo "$fingerprint" > "$data_dir/.credentials.sha256"
      echo "labelstudio.sh: first start on PostgreSQL runs the migrations (~50 s)" >&2
    fi
  elif [ "$(cat "$data_dir/.credentials.sha256" 2>/dev/null || true)" != "$fingerprint" ]; then
    echo "labelstudio.sh: warning: $data_dir was created with other credentials;" \
         "its admin keeps the token it was created with" >&2
  fi
  [ $postgres = 1 ] && start_postgres
  launch "$data_dir" "$port" "$log_file"
  echo "$pid" > "$pid_file"
  if ! wait_up "$port" "$log_file"; then
    wait "$pid" 2>/dev/null || true
    rm -f "$pid_file"; [ $postgres = 1 ] && stop_postgres
    exit 1
  fi
  if ! problem=$(check_token "$url" 2>&1); then
    terminate "$pid"; rm -f "$pid_file"; [ $postgres = 1 ] && stop_postgres
    die "$problem: $data_dir was created with another token (use a new --data-dir)"
  fi
  echo "$url" > "$url_file"
  echo "labelstudio.sh: Label Studio is up at $url (pid $pid, data $data_dir)" >&2
  echo "LABEL_STUDIO_URL=$url"
}

stop() {
  local pid
  pid=$(server_pid)
  if [ -n "$pid" ]; then
    terminate "$pid"
    echo "labelstudio.sh: stopped pid $pid ($data_dir)" >&2
  else
    echo "labelstudio.sh: no server running for $data_dir" >&2
  fi
  rm -f "$pid_file" "$url_file"
  stop_postgres
}

status() {
  local pid url
  pid=$(server_pid)
  if [ -z "$pid" ]; then echo "not running ($data_dir)"; exit 3; fi
  url=$(cat "$url_file" 2>/dev/null || echo "?")
  echo "running: $url pid $pid data $data_dir health $(health "$url" | grep . || echo DOWN)"
}

"$command"
