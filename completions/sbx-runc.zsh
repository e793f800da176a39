#compdef sbx-runc
# zsh completion for sbx-runc (man/sbx-runc.1)
_sbx_runc() {
  local -a cmds
  cmds=(
    'create:create a container from a bundle' 'run:create, start and wait' 'start:start a created container'
    'state:print the state JSON' 'kill:send a signal' 'delete:delete a container' 'exec:run one more process'
    'ps:list its processes' 'pause:freeze it' 'resume:thaw it' 'update:change its cgroup limits'
    'list:list containers' 'ls:list containers' 'features:print the features JSON'
    'checkpoint:save a gVisor container to an image' 'restore:start a container from an image')
  _arguments -C \
    '--root[directory for container state]:dir:_files -/' \
    '--log[also write errors to this file]:file:_files' \
    '--log-format[log file format]:format:(text json)' \
    '--systemd-cgroup[accepted; cgroupfs is used]' '--debug[debug logging]' \
    '--criu[accepted and ignored]:path:_files' '--rootless[accepted and ignored]:value:(true false auto)' \
    '(-v --version)'{-v,--version}'[print the version]' \
    '1:command:->cmd' '*::arg:->args'
  case $state in
    cmd) _describe command cmds ;;
    args)
      case $words[1] in
        create | run) _arguments '(-b --bundle)'{-b,--bundle}'[bundle directory]:dir:_files -/' '--pid-file[pid file]:file:_files' \
          '--console-socket[console socket]:socket:_files' '(-d --detach)'{-d,--detach}'[return once it runs (run)]' \
          '--no-pivot[MS_MOVE + chroot]' '--no-new-keyring[accepted]' '--preserve-fds[pass fds 3..3+N-1]:count:' '1:id:' ;;
        kill) _arguments '(-a --all)'{-a,--all}'[every process]' '1:id:' '2:signal:(TERM KILL INT HUP QUIT USR1 USR2 STOP CONT)' ;;
        delete) _arguments '(-f --force)'{-f,--force}'[kill a running one first]' '1:id:' ;;
        exec) _arguments '(-p --process)'{-p,--process}'[process JSON]:file:_files' '(-d --detach)'{-d,--detach}'[return once it runs]' \
          '--pid-file[pid file]:file:_files' '--console-socket[console socket]:socket:_files' '(-t --tty)'{-t,--tty}'[a pty]' \
          '--cwd[working directory]:dir:' '*'{-e,--env}'[KEY=VALUE]:env:' '(-u --user)'{-u,--user}'[UID[:GID]]:user:' '--preserve-fds[pass fds 3..3+N-1]:count:' '1:id:' '*::command:' ;;
        checkpoint) _arguments '--image-path[checkpoint image directory]:dir:_files -/' '--work-path[accepted]:dir:_files -/' \
          '--leave-running[keep it running]' '1:id:' ;;
        restore) _arguments '(-b --bundle)'{-b,--bundle}'[bundle directory]:dir:_files -/' '--image-path[checkpoint image directory]:dir:_files -/' \
          '--work-path[accepted]:dir:_files -/' '(-d --detach)'{-d,--detach}'[return once it runs]' '--pid-file[pid file]:file:_files' \
          '--console-socket[console socket]:socket:_files' '1:id:' ;;
        ps | list | ls) _arguments '(-f --format)'{-f,--format}'[format]:format:(table json)' '(-q --quiet)'{-q,--quiet}'[ids only]' '1:id:' ;;
        update) _arguments '(-r --resources)'{-r,--resources}'[resources JSON or -]:file:_files' '1:id:' ;;
        *) _arguments '1:id:' ;;
      esac ;;
  esac
}
_sbx_runc "$@"
