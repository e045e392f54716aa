# shellcheck shell=bash disable=SC2034 # STEP_RC and STEPS_* are read by the scripts that source this
# The step runner of scripts/test.sh, scripts/gpu-test.sh and scripts/gpu-hardening.sh
# (sourced, bash). A script declares its steps in order; each runs with its output to
# the terminal, to its own log file and to an optional combined log, and gets a
# result: PASS, FAIL, TIMEOUT, SKIP (not run: a step it needs did not pass, or the
# time budget was spent, or the script said why) or N/A (nothing to check there, on
# the step's own criterion). A summary table ends the run.
#
#   . "$root/scripts/lib/steps.sh"
#   steps_init NAME LOG_DIR [COMBINED_LOG]   NAME heads messages ("test.sh");
#                                            LOG_DIR/STEP.log per step (":" and "/"
#                                            in a step name become "_")
#   STEPS_BUDGET_S=450                       optional: no step starts after that many
#                                            seconds (counted from steps_init); a
#                                            running one is limited to what is left
#   steps_select "KNOWN ..." [ARG...]        optional: run only the steps named by
#                                            ARGs (equal to one, or its prefix before
#                                            ":"); an ARG whose part before ":" is not
#                                            in KNOWN exits 2. No ARG: every step.
#   step [OPTION...] NAME COMMAND...         runs COMMAND as step NAME:
#     --needs "A B"    SKIP unless steps A and B passed
#     --timeout S      kill it after S seconds (TIMEOUT). A step with a time limit
#                      (this, or a budget) runs in a child bash under timeout(1):
#                      shell functions it calls must be exported (export -f), arrays
#                      are not seen there. Without one it runs in this shell.
#     --always         run it even when steps_select did not select it
#     --note FN        FN LOG RC prints the step's note for the summary (without it,
#                      a step that did not pass gets its first error line)
#     --verdict FN     FN LOG RC decides a step whose command exited 0: non-zero = FAIL
#     --na-if FN       FN LOG RC decides a step whose command failed: zero = N/A
#     --skips FN       FN LOG prints skipped checks of the step, one a line, beyond
#                      the ones every step gets (below)
#   step_skip NAME WHY                       records NAME as SKIP (if selected)
#   steps_summary                            prints the table; returns 1 if a step
#                                            failed or timed out, else 0
#   steps_log TEXT...                        prints and appends to the combined log
#   steps_wanted NAME                        whether steps_select selected NAME
#   steps_outcome NAME                       prints NAME's result (empty: not run)
# After `step`, $STEP_RC is the command's exit status (1 when it did not run).
#
# Skipped is not passed. The summary lists, under each step, the checks inside it that
# did not run, and counts them on the last line:
#   - every line of its output starting with "SKIPPED:" (the marker; leading blanks
#     allowed), or with what the Rust tests and C programs print today for a check
#     they could not run here: "SKIPPED <name>: why" (tests/support), "SKIP <case>"
#     (image_formats' cases), "<program>: SKIP: why" (the examples);
#   - Rust test harness output: the "N ignored" of every "test result:" line, each
#     ignored test listed with cargo's reason ("test NAME ... ignored, REASON");
#   - whatever the step's --skips FN prints.

STEPS_MARKER_RE='^[[:space:]]*(SKIPPED( [^[:space:]:]+)?:|SKIP |[A-Za-z0-9_]+: SKIP: )'

steps_init() {
    STEPS_NAME=$1
    STEPS_DIR=$2
    STEPS_LOG=${3:-}
    mkdir -p "$STEPS_DIR" || return 1
    STEPS_DIR=$(cd "$STEPS_DIR" && pwd)
    [ -z "$STEPS_LOG" ] || : > "$STEPS_LOG"
    STEPS_T0=$(date +%s)
    STEPS_WANTED=()
    _steps_names=() _steps_results=() _steps_times=() _steps_notes=() _steps_skips=()
    declare -gA _steps_outcome=()
    STEP_RC=1
}

steps_log() {
    if [ -n "${STEPS_LOG:-}" ]; then
        echo "$*" | tee -a "$STEPS_LOG"
    else
        echo "$*"
    fi
}

steps_select() { # "KNOWN ..." ARG...
    local known=$1 w
    shift
    for w in "$@"; do
        case " $known " in
            *" ${w%%:*} "*) ;;
            *) echo "$STEPS_NAME: unknown step '$w' (steps: $known; see the comment at the top of the script)" >&2
               exit 2 ;;
        esac
    done
    STEPS_WANTED=("$@")
}

steps_wanted() {
    local w
    [ ${#STEPS_WANTED[@]} -eq 0 ] && return 0
    for w in "${STEPS_WANTED[@]}"; do
        [ "$1" = "$w" ] && return 0
        case $1 in "$w":*) return 0 ;; esac
    done
    return 1
}

steps_outcome() { echo "${_steps_outcome[$1]:-}"; }

steps_log_file() { echo "$STEPS_DIR/${1//[:\/]/_}.log"; }

_steps_count() { # N WORD: "1 WORD", "2 WORDs"
    if [ "$1" -eq 1 ]; then echo "1 $2"; else echo "$1 $2s"; fi
}

_steps_add() { # NAME RESULT SECONDS NOTE SKIPS
    _steps_names+=("$1") _steps_results+=("$2") _steps_times+=("$3") _steps_notes+=("$4") _steps_skips+=("$5")
    _steps_outcome[$1]=$2
}

step_skip() { # NAME WHY
    steps_wanted "$1" || return 0
    steps_log "==> $1: SKIP ($2)"
    _steps_add "$1" SKIP 0 "$2" ""
}

# Prints the skipped checks found in a step's log, one a line.
steps_skipped_checks() { # LOG
    # The marker lines, blanks trimmed and squeezed.
    grep -E "$STEPS_MARKER_RE" "$1" | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//' -e 's/[[:space:]]\{2,\}/ /g' |
        cut -c1-200
    steps_libtest_ignored "$1"
}

# Rust test harness output: each ignored test ("lib: name (reason)", the executable
# from cargo's "Running" line), and a line for ignored tests counted by a
# "test result:" line but not named in the log.
steps_libtest_ignored() { # LOG
    awk '
        /^[[:space:]]*Running / {
            exe = $2
            if (exe == "unittests") exe = $3
            sub(/^.*\//, "", exe); sub(/\.rs$/, "", exe)
        }
        /^[[:space:]]*Doc-tests / { exe = "doc-tests " $2 }
        /^test .* \.\.\. ignored/ {
            line = $0
            name = line; sub(/^test /, "", name); sub(/ \.\.\. ignored.*$/, "", name)
            why = line; sub(/^.* \.\.\. ignored,? ?/, "", why)
            listed++
            print "ignored: " (exe != "" ? exe ": " : "") name (why != "" ? " (" why ")" : "")
        }
        /^test result: / {
            if (match($0, /[0-9]+ ignored/)) counted += substr($0, RSTART, RLENGTH - 8)
        }
        END {
            if (counted > listed) print "ignored: " counted - listed " more test(s) counted by \"test result:\" lines but not named in the log"
        }' "$1" | cut -c1-200
}

# The first line that looks like an error, else the last non-blank line.
steps_error_line() { # LOG
    { grep -vE '(^|[^0-9])0 failed' "$1" | grep -m1 -iE 'panicked|error|fail|not found|no such|missing' ||
        grep -v '^[[:space:]]*$' "$1" | tail -1; } | cut -c1-100
}

step() {
    local needs="" limit="" always=0 note_fn="" verdict_fn="" na_fn="" skips_fn=""
    while [ $# -gt 0 ]; do
        case $1 in
            --needs) needs=$2; shift 2 ;;
            --timeout) limit=$2; shift 2 ;;
            --always) always=1; shift ;;
            --note) note_fn=$2; shift 2 ;;
            --verdict) verdict_fn=$2; shift 2 ;;
            --na-if) na_fn=$2; shift 2 ;;
            --skips) skips_fn=$2; shift 2 ;;
            --) shift; break ;;
            -*) echo "steps.sh: step: unknown option $1" >&2; return 2 ;;
            *) break ;;
        esac
    done
    local name=$1
    shift
    STEP_RC=1
    if [ "$always" = 0 ] && ! steps_wanted "$name"; then return 0; fi
    local n
    for n in $needs; do
        if [ "${_steps_outcome[$n]:-}" != PASS ]; then
            steps_log ""
            steps_log "==> $name: SKIP ($n did not pass)"
            _steps_add "$name" SKIP 0 "$n did not pass" ""
            return 0
        fi
    done
    if [ -n "${STEPS_BUDGET_S:-}" ]; then
        local left=$((STEPS_BUDGET_S - ($(date +%s) - STEPS_T0)))
        if [ "$left" -le 10 ]; then
            steps_log ""
            steps_log "==> $name: SKIP (not started: the time budget of ${STEPS_BUDGET_S}s is spent)"
            _steps_add "$name" SKIP 0 "time budget spent" ""
            return 0
        fi
        if [ -z "$limit" ] || [ "$limit" -gt "$left" ]; then limit=$left; fi
    fi

    local slog t0 t1 rc secs result note="" skips
    slog=$(steps_log_file "$name")
    steps_log ""
    steps_log "==> $name${limit:+ (limit ${limit}s)}: $*"
    t0=$(date +%s%N)
    if [ -n "$limit" ]; then
        # timeout kills the whole process group; stdbuf makes every program in it
        # line-buffered, so the logs interleave as they happened.
        timeout -k 5 "$limit" stdbuf -oL -eL bash -c '"$@"' "$name" "$@" 2>&1 |
            if [ -n "$STEPS_LOG" ]; then tee "$slog" | tee -a "$STEPS_LOG"; else tee "$slog"; fi
        rc=${PIPESTATUS[0]}
    else
        "$@" 2>&1 |
            if [ -n "$STEPS_LOG" ]; then tee "$slog" | tee -a "$STEPS_LOG"; else tee "$slog"; fi
        rc=${PIPESTATUS[0]}
    fi
    t1=$(date +%s%N)
    secs=$(( (t1 - t0) / 1000000000 )).$(( (t1 - t0) / 100000000 % 10 ))
    STEP_RC=$rc

    if [ "$rc" -eq 0 ]; then
        result=PASS
    elif [ -n "$limit" ] && { [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; }; then
        result=TIMEOUT note="killed after ${limit}s"
    elif [ -n "$na_fn" ] && "$na_fn" "$slog" "$rc"; then
        result=N/A
    else
        result=FAIL note="exit status $rc"
    fi
    if [ -n "$note_fn" ]; then
        local said
        said=$("$note_fn" "$slog" "$rc")
        note="$note${said:+${note:+; }$said}"
    fi
    if [ -n "$verdict_fn" ] && [ "$result" = PASS ] && ! "$verdict_fn" "$slog" "$rc"; then
        result=FAIL
    fi
    if [ "$result" != PASS ] && [ "$result" != N/A ] && [ -z "$note_fn" ]; then
        local first
        first=$(steps_error_line "$slog")
        note="$note${first:+${note:+; }$first}"
    fi
    skips=$(steps_skipped_checks "$slog"; [ -z "$skips_fn" ] || "$skips_fn" "$slog")
    local nskips=0
    [ -z "$skips" ] || nskips=$(printf '%s\n' "$skips" | wc -l)
    if [ "$nskips" -gt 0 ]; then
        note="$note${note:+; }$(_steps_count "$nskips" check) skipped"
    fi
    steps_log "==> $name: $result in ${secs}s${note:+ ($note)}$([ "$result" = PASS ] || echo "; log: $slog")"
    _steps_add "$name" "$result" "$secs" "$note" "$skips"
}

steps_summary() {
    local i w=16 total=$(($(date +%s) - STEPS_T0)) nskips=0 line
    local failed=() skipped=() na=() passed=0
    for i in "${!_steps_names[@]}"; do
        [ "${#_steps_names[$i]}" -le "$w" ] || w=${#_steps_names[$i]}
    done
    local dashes
    dashes=$(printf '%*s' "$((w + 2))" '' | tr ' ' -)
    {
        echo ""
        echo "==== $STEPS_NAME summary (${total}s; full log: ${STEPS_LOG:-the output above}; per step: $STEPS_DIR/)"
        printf '| %-*s | %-7s | %7s | %s\n' "$w" step result seconds note
        echo "|$dashes|---------|---------|------"
        for i in "${!_steps_names[@]}"; do
            printf '| %-*s | %-7s | %7s | %s\n' "$w" "${_steps_names[$i]}" "${_steps_results[$i]}" \
                "${_steps_times[$i]}" "${_steps_notes[$i]}"
            if [ -n "${_steps_skips[$i]}" ]; then
                while IFS= read -r line; do
                    printf '| %-*s | %-7s | %7s |   - %s\n' "$w" "" "" "" "$line"
                    nskips=$((nskips + 1))
                done <<< "${_steps_skips[$i]}"
            fi
            case ${_steps_results[$i]} in
                PASS) passed=$((passed + 1)) ;;
                FAIL|TIMEOUT) failed+=("${_steps_names[$i]}") ;;
                SKIP) skipped+=("${_steps_names[$i]}") ;;
                N/A) na+=("${_steps_names[$i]}") ;;
            esac
        done
    } > "$STEPS_DIR/summary.md"
    if [ -n "$STEPS_LOG" ]; then tee -a "$STEPS_LOG" < "$STEPS_DIR/summary.md"; else cat "$STEPS_DIR/summary.md"; fi

    local n=${#_steps_names[@]} parts=()
    [ ${#skipped[@]} -eq 0 ] || parts+=("$(_steps_count ${#skipped[@]} step) skipped (${skipped[*]})")
    [ ${#na[@]} -eq 0 ] || parts+=("${#na[@]} not applicable (${na[*]})")
    [ "$nskips" -eq 0 ] || parts+=("$(_steps_count "$nskips" check) skipped (see above)")
    local rest="" p
    for p in "${parts[@]}"; do rest="$rest, $p"; done
    if [ ${#failed[@]} -gt 0 ]; then
        steps_log "$STEPS_NAME: FAILED: ${#failed[@]} of $(_steps_count "$n" step) failed (${failed[*]}), $passed passed$rest, in ${total}s; logs in $STEPS_DIR/"
        return 1
    fi
    if [ -z "$rest" ]; then
        steps_log "$STEPS_NAME: PASSED: all $(_steps_count "$n" step) passed in ${total}s"
    else
        if [ "$passed" -eq "$n" ]; then n=$(_steps_count "$n" step); else n="$passed of $(_steps_count "$n" step)"; fi
        steps_log "$STEPS_NAME: PASSED: $n passed$rest, in ${total}s"
    fi
    return 0
}
