# bash completion for sbx. Installed as
# /usr/share/bash-completion/completions/sbx (see CMakeLists.txt install()).
_sbx() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
  local cmds="run create exec ps list inspect wait stop kill rm rename logs cp import images tag rmi gc info snapshot snapshot-dir snapshots export checkpoint restore pull push login logout serve stats batch system build history image network trajectory branch replay volume"
  local global="-h --help -v --version --root --run-root --log-level"
  local sbx_root=${SBX_ROOT:-/var/lib/sbx} run_root=${SBX_RUN_ROOT:-/run/sbx} i
  for ((i = 1; i < COMP_CWORD; i++)); do
    case ${COMP_WORDS[i]} in
      --root) sbx_root=${COMP_WORDS[i+1]} ;;
      --run-root) run_root=${COMP_WORDS[i+1]} ;;
    esac
  done
  # The subcommand: the first word that is not an option or an option's value.
  local cmd="" j
  for ((j = 1; j < COMP_CWORD; j++)); do
    case ${COMP_WORDS[j]} in
      --root|--run-root|--log-level) ((j++)) ;;
      -*) ;;
      *) cmd=${COMP_WORDS[j]}; break ;;
    esac
  done
  case $prev in
    -v|--volume)
      # HOST:CONTAINER:OPTS: the options after the second colon.
      if [[ $cur == *:*:* ]]; then COMPREPLY=($(compgen -W "ro rw nosuid nodev noexec idmap=host" -P "${cur%:*}:" -- "${cur##*:}"))
      else COMPREPLY=($(compgen -f -- "$cur")); fi
      return ;;
    --root|--run-root|--env-file|--rootfs|-o|--output|--runsc|--registries-conf|--end-record|--upper|--host-dir|--iidfile) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    -f|--file) [ "$cmd" = build ] && { COMPREPLY=($(compgen -f -- "$cur")); return; } ;;
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return ;;
    --network|--net) COMPREPLY=($(compgen -W "none host private bridge $(sbx --run-root "$run_root" network ls 2>/dev/null | awk 'NR > 1 {print $2}')" -- "$cur")); return ;;
    --runtime) COMPREPLY=($(compgen -W "native gvisor" -- "$cur")); return ;;
    --userns) COMPREPLY=($(compgen -W "auto host" -- "$cur")); return ;;
    --format) [ "$cmd" = export ] && COMPREPLY=($(compgen -W "oci-archive docker-archive" -- "$cur")) || COMPREPLY=($(compgen -W "json {{.ID}} {{.CpuMs}} {{.MaxRssBytes}}" -- "$cur")); return ;;
    --pull) COMPREPLY=($(compgen -W "missing always never newer" -- "$cur")); return ;;
    --tls-verify) COMPREPLY=($(compgen -W "true false" -- "$cur")); return ;;
    --authfile) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --cert-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    -s|--signal) COMPREPLY=($(compgen -W "TERM KILL INT HUP QUIT USR1 USR2 STOP CONT" -- "$cur")); return ;;
    --image) COMPREPLY=($(compgen -W "$(sbx --root "$sbx_root" images 2>/dev/null | awk 'NR > 1 && $1 != "<none>" {print $1 ":" $2}')" -- "$cur")); return ;;
    --gpus) COMPREPLY=($(compgen -W "all" -- "$cur")); return ;;
    --platform) COMPREPLY=($(compgen -W "linux/amd64 linux/arm64 linux/arm/v7" -- "$cur")); return ;;
  esac
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "$cmds $global" -- "$cur"))
    return
  fi
  local images sandboxes
  images=$(sbx --root "$sbx_root" images 2>/dev/null | awk 'NR > 1 && $1 != "<none>" {print $1; print $1 ":" $2}')
  # short ids and names (sbx itself reads the state: its layout is its own)
  sandboxes=$(sbx --root "$sbx_root" --run-root "$run_root" ps -a --format '{{.ID}} {{.Names}}' 2>/dev/null)
  # Options of each subcommand (as its --help lists them; tests/integration/test_cli_docs.sh checks).
  local common="-e --env --env-file -w --workdir -u --user -v --volume --mount --tmpfs --read-only --hostname --network --net --network-alias --ip --allow-egress --deny-egress -p --publish --dns --add-host --userns -m --memory --disk --cpus --pids-limit --ulimit --timeout --rootfs --entrypoint --name --runtime --pull --runsc"
  local reg="--tls-verify --authfile --cert-dir"
  local opts="" words_list=""
  case $cmd in
    run) opts="$common --mount-snapshot -i --interactive -t --tty --gpus --device --end-record --rm"; words_list=$images ;;
    create) opts="$common --mount-snapshot --gpus --device --idle-timeout -l --label --record --redact --timens --no-timens"; words_list=$images ;;
    exec) opts="-e --env -w --workdir -u --user --timeout -i --interactive -t --tty"; words_list=$sandboxes ;;
    ps|list) opts="-a --all -q --quiet --json --no-trunc -f --filter --format" ;;
    inspect) opts="--json"; words_list="$images $sandboxes" ;;
    wait) words_list=$sandboxes ;;
    stop) opts="-t --time"; words_list=$sandboxes ;;
    kill) opts="-s --signal"; words_list=$sandboxes ;;
    rename) words_list=$sandboxes ;;
    rm) opts="-f --force -v --volumes -a --all --filter"; words_list=$sandboxes ;;
    logs) opts="-f --follow"; words_list=$sandboxes ;;
    cp) words_list="$(compgen -f -- "$cur") $(printf '%s: ' $sandboxes)" ;;
    import) opts="-q --quiet"; words_list=$(compgen -f -- "$cur") ;;
    images) opts="--json -q --quiet" ;;
    tag) words_list=$images ;;
    rmi) opts="-f --force"; words_list=$images ;;
    gc) opts="--older-than" ;;
    serve) opts="--socket --tcp --token-file --e2b --sandbox-fusion --languages --trajectory-dir --max-concurrency --queue-timeout --runtime --max-connections --max-client-connections --header-timeout --idle-timeout" ;;
    info) opts="--json --runsc" ;;
    snapshot) opts="--name --upper --image"; words_list=$sandboxes ;;
    export) opts="-o --output --format --name --json"; words_list=$images ;;
    snapshot-dir) opts="--name --host-dir"; words_list=$sandboxes ;;
    snapshots)
      # Its own subcommands: rm NAME..., extract NAME DIR, prune --older-than D.
      local sub="" k
      for ((k = j + 1; k < COMP_CWORD; k++)); do
        case ${COMP_WORDS[k]} in -*) ;; *) sub=${COMP_WORDS[k]}; break ;; esac
      done
      local snaps
      snaps=$(sbx --root "$sbx_root" snapshots 2>/dev/null | awk 'NR > 1 {print $1}')
      case $sub in
        "") opts="--json"; words_list="rm extract prune" ;;
        rm) words_list=$snaps ;;
        extract) words_list="$snaps $(compgen -d -- "$cur")" ;;
        prune) opts="--older-than" ;;
      esac ;;
    checkpoint) opts="--name --leave-running --runsc"; words_list=$sandboxes ;;
    restore) opts="--name --count --runsc --json"
      words_list=$(sbx --root "$sbx_root" snapshots 2>/dev/null | awk 'NR > 1 && $2 == "memory" {print $1}') ;;
    pull) opts="--platform -q --quiet --json --registries-conf --jobs $reg"; words_list=$images ;;
    push) opts="-q --quiet --json $reg"; words_list=$images ;;
    login) opts="-u --username -p --password --password-stdin $reg" ;;
    logout) opts="-a --all --authfile" ;;
    batch) opts="-P --parallel --pool --image --timeout -m --memory --network --allow-egress --deny-egress --dns --add-host -o --output --resume --max-output --userns --runtime --runsc -q --quiet"; words_list=$(compgen -f -- "$cur") ;;
    system)
      # Its own subcommands: tune [--favordynmods on|off] [--json], df [--json].
      local ssub="" k2
      for ((k2 = j + 1; k2 < COMP_CWORD; k2++)); do
        case ${COMP_WORDS[k2]} in -*) ;; *) ssub=${COMP_WORDS[k2]}; break ;; esac
      done
      case $prev in --favordynmods) COMPREPLY=($(compgen -W "on off" -- "$cur")); return ;; esac
      case $ssub in
        "") words_list="tune df" ;;
        tune) opts="--favordynmods --json" ;;
        df) opts="--json" ;;
      esac ;;
    stats) opts="--no-stream --json --no-trunc -a --all -i --interval"; words_list=$sandboxes ;;
    build) opts="-t --tag -f --file --build-arg --target --no-cache --pull --network --label --secret --iidfile --platform -q --quiet --json --rm"; words_list="- $(compgen -d -- "$cur")" ;;
    history) opts="--no-trunc -q --quiet --json"; words_list=$images ;;
    image)
      # Its own subcommand: prune [--build-cache] [--json].
      local isub="" k3
      for ((k3 = j + 1; k3 < COMP_CWORD; k3++)); do
        case ${COMP_WORDS[k3]} in -*) ;; *) isub=${COMP_WORDS[k3]}; break ;; esac
      done
      case $isub in
        "") words_list="prune" ;;
        prune) opts="--build-cache --json" ;;
      esac ;;
    trajectory)
      # Its own subcommands: show SANDBOX|FILE, export SANDBOX -o FILE.
      local tsub="" k4
      for ((k4 = j + 1; k4 < COMP_CWORD; k4++)); do
        case ${COMP_WORDS[k4]} in -*) ;; *) tsub=${COMP_WORDS[k4]}; break ;; esac
      done
      case $tsub in
        "") words_list="show export" ;;
        show) opts="--json"; words_list="$sandboxes $(compgen -f -- "$cur")" ;;
        export) opts="-o --output"; words_list=$sandboxes ;;
      esac ;;
    branch) opts="--at --count --name"; words_list="$sandboxes $(compgen -f -- "$cur")" ;;
    replay) opts="--image --until --keep --tolerate-regex --tolerate-path --json"; words_list="$(compgen -f -- "$cur") $sandboxes" ;;
    network)
      # Its own subcommands: create ls inspect rm prune connect disconnect.
      local nsub="" k3
      for ((k3 = j + 1; k3 < COMP_CWORD; k3++)); do
        case ${COMP_WORDS[k3]} in -*) ;; *) nsub=${COMP_WORDS[k3]}; break ;; esac
      done
      local nets
      nets=$(sbx --run-root "$run_root" network ls 2>/dev/null | awk 'NR > 1 {print $2}')
      case $nsub in
        "") words_list="create ls list inspect rm remove prune connect disconnect" ;;
        create) opts="--subnet --gateway --internal --allow-egress --deny-egress --dns -l --label -d --driver --json" ;;
        ls|list) opts="--json -q --quiet --no-trunc -f --filter" ;;
        inspect|rm|remove) words_list=$nets ;;
        prune) opts="-f --force --filter --json" ;;
        connect) opts="--alias --ip"; words_list="$nets $sandboxes" ;;
        disconnect) opts="-f --force"; words_list="$nets $sandboxes" ;;
      esac ;;
    volume)
      # Its own subcommands: create ls inspect rm prune.
      local vsub="" k4
      for ((k4 = j + 1; k4 < COMP_CWORD; k4++)); do
        case ${COMP_WORDS[k4]} in -*) ;; *) vsub=${COMP_WORDS[k4]}; break ;; esac
      done
      local vols
      vols=$(sbx --root "$sbx_root" volume ls -q 2>/dev/null)
      case $vsub in
        "") words_list="create ls list inspect rm remove prune" ;;
        create) opts="-l --label -d --driver -o --opt --json" ;;
        ls|list) opts="--json -q --quiet -f --filter" ;;
        inspect) opts="--json"; words_list=$vols ;;
        rm|remove) opts="-f --force"; words_list=$vols ;;
        prune) opts="-f --force --filter --json" ;;
      esac ;;
  esac
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "-h --help $opts" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$words_list" -- "$cur"))
  fi
}
complete -F _sbx sbx
