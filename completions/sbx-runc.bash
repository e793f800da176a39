# bash completion for sbx-runc (man/sbx-runc.1)
_sbx_runc() {
  local cur=${COMP_WORDS[COMP_CWORD]} cmd="" w
  local cmds="create run start state kill delete exec ps pause resume update list ls features checkpoint restore"
  for w in "${COMP_WORDS[@]:1:COMP_CWORD-1}"; do
    case " $cmds " in *" $w "*) cmd=$w; break ;; esac
  done
  local opts
  case $cmd in
    "") opts="--root --log --log-format --systemd-cgroup --debug --criu --rootless --version --help $cmds" ;;
    create) opts="--bundle --pid-file --console-socket --no-pivot --no-new-keyring --preserve-fds --help" ;;
    run) opts="--bundle --pid-file --console-socket --detach --no-pivot --no-new-keyring --preserve-fds --help" ;;
    kill) opts="--all --help" ;;
    delete) opts="--force --help" ;;
    exec) opts="--process --detach --pid-file --console-socket --tty --cwd --env --user --preserve-fds --help" ;;
    checkpoint) opts="--image-path --work-path --leave-running --help" ;;
    restore) opts="--bundle --image-path --work-path --detach --pid-file --console-socket --help" ;;
    ps | list | ls) opts="--format --quiet --help" ;;
    update) opts="--resources --help" ;;
    *) opts="--help" ;;
  esac
  if [[ $cur != -* && -n $cmd && $cmd != features && $cmd != list && $cmd != ls && -d ${SBX_RUNC_ROOT:-/run/sbx-runc} ]]; then
    COMPREPLY=($(compgen -W "$(ls "${SBX_RUNC_ROOT:-/run/sbx-runc}" 2>/dev/null)" -- "$cur"))
    return
  fi
  COMPREPLY=($(compgen -W "$opts" -- "$cur"))
}
complete -F _sbx_runc sbx-runc
