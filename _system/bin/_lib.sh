# Shared by the llm-wiki job scripts; sourced, never run. POSIX sh (dash): no bash-isms.
#
# Environment (all a script needs; it runs fine under `env -i`):
#   LLM_WIKI_DIR       the wiki folder (required, here or in the env file)
#   LLM_WIKI_PYTHON    absolute path of a Python that has llm-wiki's dependencies
#                      (default: python3 on PATH); in a checkout, its package is put on PYTHONPATH
#   LLM_WIKI_ENV_FILE  a file of KEY=value lines (default: $HOME/.config/llm-wiki/env), the
#                      place for ANTHROPIC_API_KEY and PATH additions; keep it mode 0600. It is
#                      read as shell, after the environment the job started with, so a value it
#                      sets wins (a scheduled run and a run by hand then behave the same; write
#                      PATH="/opt/homebrew/bin:$PATH" to add to PATH).
#   LLM_WIKI_LOG       the job's log, set by the plist or unit: past LLM_WIKI_LOG_MAX_BYTES
#                      (default 1048576) a run moves it to <log>.1 (.1 to .2, .2 to .3; three
#                      kept) and writes to a fresh one.
#
# Log lines go to stderr as "<UTC time> <job> <message>"; the scheduler files them. Every run
# that gets as far as reading its environment ends with a "done (exit N)" line.

LLM_WIKI_BIN=$(CDPATH= cd -- "$(dirname -- "$0")" && pwd)
LLM_WIKI_SRC=$(dirname -- "$LLM_WIKI_BIN")
job=$(basename -- "$0")

wiki_log() {
    printf '%s %s %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$job" "$*" >&2
}

# wiki_die MESSAGE [EXIT_CODE]: log one ERROR line and the end of the run, and exit (1 unless
# given).
wiki_die() {
    wiki_log "ERROR: $1"
    wiki_log "done (exit ${2:-1})"
    exit "${2:-1}"
}

# Rotate this job's log by size (see LLM_WIKI_LOG above); this run then writes to the new one.
wiki_rotate_log() {
    [ -n "${LLM_WIKI_LOG:-}" ] && [ -f "$LLM_WIKI_LOG" ] || return 0
    size=$(wc -c <"$LLM_WIKI_LOG" 2>/dev/null | tr -d ' ')
    [ "${size:-0}" -gt "${LLM_WIKI_LOG_MAX_BYTES:-1048576}" ] || return 0
    for n in 2 1; do
        [ -f "$LLM_WIKI_LOG.$n" ] && mv -f "$LLM_WIKI_LOG.$n" "$LLM_WIKI_LOG.$((n + 1))"
    done
    mv -f "$LLM_WIKI_LOG" "$LLM_WIKI_LOG.1" || return 0
    exec >>"$LLM_WIKI_LOG" 2>&1
}

if [ -z "${LLM_WIKI_ENV_FILE:-}" ] && [ -n "${HOME:-}" ]; then
    LLM_WIKI_ENV_FILE="$HOME/.config/llm-wiki/env"
fi
if [ -n "${LLM_WIKI_ENV_FILE:-}" ] && [ -f "$LLM_WIKI_ENV_FILE" ]; then
    set -a
    # shellcheck disable=SC1090
    . "$LLM_WIKI_ENV_FILE"
    set +a
fi

[ -n "${LLM_WIKI_DIR:-}" ] || wiki_die "LLM_WIKI_DIR is not set; set it in ${LLM_WIKI_ENV_FILE:-the env file}." 2
export LLM_WIKI_DIR
if [ -d "$LLM_WIKI_SRC/llm_wiki" ]; then  # a checkout: its package first (an installed copy of
    PYTHONPATH="$LLM_WIKI_SRC${PYTHONPATH:+:$PYTHONPATH}"  # these scripts is inside the package)
    export PYTHONPATH
fi

# Run the llm-wiki command with this checkout's package.
llm_wiki() {
    "${LLM_WIKI_PYTHON:-python3}" -m llm_wiki "$@"
}

# Today by the wiki's one clock (LLM_WIKI_NOW overrides it), as YYYY-MM-DD.
wiki_today() {
    "${LLM_WIKI_PYTHON:-python3}" -c 'from llm_wiki import clock; print(clock.today())'
}

# Whether pid $1 is alive and runs this job: after a crash left the lock behind, its pid may
# belong to any other process (a reboot, pids wrapping), which must not skip the job forever.
wiki_is_job() {
    kill -0 "$1" 2>/dev/null || return 1
    holder_args=$(ps -o args= -p "$1" 2>/dev/null) || return 0  # no ps here: trust kill -0
    case "$holder_args" in
        *"$job"*) return 0 ;;
        *) return 1 ;;
    esac
}

# Take this job's lock, or exit 0 saying another run holds it. Released on exit.
wiki_job_lock() {
    lock_dir="$LLM_WIKI_DIR/.llm-wiki/jobs/$job.lock"
    mkdir -p "$LLM_WIKI_DIR/.llm-wiki/jobs" || wiki_die "cannot create $LLM_WIKI_DIR/.llm-wiki/jobs"
    if ! mkdir "$lock_dir" 2>/dev/null; then
        holder=$(cat "$lock_dir/pid" 2>/dev/null || true)
        if [ -n "$holder" ] && wiki_is_job "$holder"; then
            wiki_log "another run (pid $holder) holds the lock; exiting"
            wiki_log "done (exit 0)"
            exit 0
        fi
        wiki_log "removing a stale lock left by pid ${holder:-unknown}"
        rm -rf "$lock_dir"
        mkdir "$lock_dir" 2>/dev/null || {
            wiki_log "another run took the lock; exiting"
            wiki_log "done (exit 0)"
            exit 0
        }
    fi
    echo $$ >"$lock_dir/pid"
    trap 'rm -rf "$lock_dir"' EXIT
    trap 'exit 130' INT TERM HUP
}

# Run `llm-wiki ARGS` as this scheduled job: take the job lock, log the start and the end, keep
# the command's stdout (its report) and turn its stderr into timestamped log lines — ERROR lines
# when it fails. Returns the command's exit status.
wiki_job() {
    wiki_job_lock
    wiki_rotate_log
    wiki_log "start: $1 in $LLM_WIKI_DIR"
    exec 3>&1
    messages=$(llm_wiki "$@" 2>&1 1>&3)
    status=$?
    exec 3>&-
    if [ -n "$messages" ]; then
        printf '%s\n' "$messages" | while IFS= read -r line; do
            if [ "$status" -ne 0 ]; then
                wiki_log "ERROR: ${line#Error: }"
            else
                wiki_log "$line"
            fi
        done
    fi
    wiki_log "done (exit $status)"
    return "$status"
}
