# bash completion for sbx. Installed as
# /usr/share/bash-completion/completions/sbx (see CMakeLists.txt install()).
_sbx() {
  local cur prev words cword
  _init_completion 2>/dev/null || { cur=${COMP_WORDS[COMP_CWORD]}; prev=${COMP_WORDS[COMP_CWORD-1]}; }
  local cmds="run create exec ps inspect wait stop kill rm logs cp import images tag rmi gc info snapshot snapshot-dir snapshots export checkpoint restore pull push login logout"
  local global="--root --run-root --log-level --help --version"
  local sbx_root=/var/lib/sbx run_root=/run/sbx i
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
    --root|--run-root|--env-file|--rootfs|-o|--runsc|--registries-conf) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --log-level) COMPREPLY=($(compgen -W "trace debug info warn error off" -- "$cur")); return ;;
    --network) COMPREPLY=($(compgen -W "none host" -- "$cur")); return ;;
    --runtime) COMPREPLY=($(compgen -W "native gvisor" -- "$cur")); return ;;
    --userns) COMPREPLY=($(compgen -W "auto host" -- "$cur")); return ;;
    --format) COMPREPLY=($(compgen -W "oci-archive docker-archive" -- "$cur")); return ;;
    --pull) COMPREPLY=($(compgen -W "missing always never newer" -- "$cur")); return ;;
    --tls-verify) COMPREPLY=($(compgen -W "true false" -- "$cur")); return ;;
    --authfile) COMPREPLY=($(compgen -f -- "$cur")); return ;;
    --cert-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
    --platform) COMPREPLY=($(compgen -W "linux/amd64 linux/arm64 linux/arm/v7" -- "$cur")); return ;;
  esac
  if [ -z "$cmd" ]; then
    COMPREPLY=($(compgen -W "$cmds $global" -- "$cur"))
    return
  fi
  local images sandboxes
  images=$(sbx --root "$sbx_root" images 2>/dev/null | awk 'NR > 1 && $1 != "<none>" {print $1; print $1 ":" $2}')
  sandboxes=$(ls "$run_root" 2>/dev/null | grep -E '^[0-9a-f]{64}$' | cut -c1-12)
  case $cmd in
    run|create)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "-e --env --env-file -w --workdir -u --user -v --volume --tmpfs --read-only --hostname --network --memory --disk --cpus --pids-limit --ulimit --timeout -i --interactive -t --tty --rm --name --entrypoint --runtime --runsc --userns --gpus --device --mount-snapshot --end-record --rootfs --label --idle-timeout --pull" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$images" -- "$cur"))
      fi ;;
    inspect|rmi|tag|export) COMPREPLY=($(compgen -W "$images $sandboxes" -- "$cur")) ;;
    exec|wait|stop|kill|rm|logs|snapshot|snapshot-dir|checkpoint) COMPREPLY=($(compgen -W "$sandboxes" -- "$cur")) ;;
    import|cp) COMPREPLY=($(compgen -f -- "$cur")) ;;
    info) COMPREPLY=($(compgen -W "--json --runsc" -- "$cur")) ;;
    pull)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "--platform -q --quiet --json --jobs --tls-verify --authfile --cert-dir --registries-conf" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$images" -- "$cur"))
      fi ;;
    push)
      if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "-q --quiet --json --tls-verify --authfile --cert-dir" -- "$cur"))
      else
        COMPREPLY=($(compgen -W "$images" -- "$cur"))
      fi ;;
    login) COMPREPLY=($(compgen -W "-u --username -p --password --password-stdin --tls-verify --authfile --cert-dir" -- "$cur")) ;;
    logout) COMPREPLY=($(compgen -W "-a --all --authfile" -- "$cur")) ;;
  esac
}
complete -F _sbx sbx
