# bash completion for cprof                                    -*- shell-script -*-
#
# Install as $(datadir)/bash-completion/completions/cprof, or source it from
# ~/.bashrc.  Works with or without the bash-completion package (only compgen,
# compopt and complete are used).
#
# Command and option names come from the cprof being completed, through its
# hidden helpers `cprof --list-commands`, `cprof --list-options COMMAND` and
# `cprof --list-formats COMMAND` (the values of its --format);
# the answers are cached per program and command, so that pressing TAB again
# does not run cprof again.  Listed here: the values of
# scrape --profile, of top --view and --sort and of --log-level (record, serve,
# scrape), which options take a value
# (_cprof_takes_arg), and what is completed for the values and arguments that
# are files, directories or process ids, and for the command that
# `cprof record -- CMD ARGS` and `cprof top -- CMD ARGS` run.

# cache: "PROGRAM<TAB>COMMAND" (or "PROGRAM<TAB>" for the command list) -> words
declare -gA _cprof_cache 2>/dev/null || declare -A _cprof_cache

# _cprof_prog: the cprof being completed, in $_cprof_bin
_cprof_prog()
{
	local p=${COMP_WORDS[0]}
	case $p in
	\~/*) p=$HOME/${p#\~/} ;;
	esac
	if [[ $p == */* ]]; then
		[[ -x $p && ! -d $p ]] || p=cprof
	else
		type -P -- "$p" >/dev/null 2>&1 || p=cprof
	fi
	_cprof_bin=$p
}

# _cprof_words [COMMAND]: the command names (no argument) or COMMAND's options,
# in $_cprof_list, one per line
_cprof_words()
{
	local key="$_cprof_bin"$'\t'"${1-}" words
	if [[ -n ${_cprof_cache[$key]+set} ]]; then
		_cprof_list=${_cprof_cache[$key]}
		return
	fi
	if [[ $# -eq 0 ]]; then
		words=$("$_cprof_bin" --list-commands 2>/dev/null)
	else
		words=$("$_cprof_bin" --list-options "$1" 2>/dev/null)
	fi
	if [[ $? -ne 0 || -z $words ]]; then
		# no usable cprof: do not cache, so that a later TAB tries again
		if [[ $# -eq 0 ]]; then
			words=$'record\nserve\nscrape\nimport\nquery\nmerge\ndiff\nsql\ntop\nhelp'
		else
			words=$'-h\n--help'
		fi
		_cprof_list=$words
		return
	fi
	_cprof_cache[$key]=$words
	_cprof_list=$words
}

# _cprof_reply WORDLIST: COMPREPLY = the words of WORDLIST (one a line) that
# start with $cur, each with $pre in front
_cprof_reply()
{
	local w
	COMPREPLY=()
	while IFS= read -r w; do
		[[ -n $w && $w == "$cur"* ]] && COMPREPLY+=("$pre$w")
	done <<<"$1"
}

# _cprof_files: COMPREPLY = the names of files that start with $cur
_cprof_files()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	[[ -n $pre ]] && COMPREPLY=("${COMPREPLY[@]/#/$pre}")
}

# _cprof_dirs: COMPREPLY = the names of directories that start with $cur
_cprof_dirs()
{
	compopt -o filenames 2>/dev/null
	mapfile -t COMPREPLY < <(compgen -d -- "$cur")
	[[ -n $pre ]] && COMPREPLY=("${COMPREPLY[@]/#/$pre}")
}

# _cprof_pids: COMPREPLY = the ids of the running processes that start with
# the last element of the comma-separated list in $cur (-p 12,34)
_cprof_pids()
{
	local p list
	if [[ $cur == *,* ]]; then
		pre=$pre${cur%,*},
		cur=${cur##*,}
	fi
	list=$(cd /proc 2>/dev/null && for p in [0-9]*; do printf '%s\n' "$p"; done)
	_cprof_reply "$list"
}

# _cprof_command I: complete the command line of `cprof record|top -- CMD ARGS`,
# which starts at word I: with bash-completion, as that command's own line;
# without it, command names for CMD and file names for its arguments
_cprof_command()
{
	if declare -F _command_offset >/dev/null 2>&1; then
		_command_offset "$1"
	elif ((COMP_CWORD == $1)) && [[ $cur != */* ]]; then
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -c -- "$cur" | sort -u)
	else
		_cprof_files
	fi
}

# _cprof_formats COMMAND: the values of COMMAND's --format, one a line: what
# `cprof --list-formats COMMAND` prints (the table the command checks them with)
_cprof_formats()
{
	"$_cprof_bin" --list-formats "$1" 2>/dev/null
}

# the values of cprof scrape --profile (the profiles that it knows the path of)
_cprof_scrape_profiles=$'process_cpu\nmemory\nheap\nblock\nmutex\ngoroutine\nfgprof'
# the values of cprof top --view and --sort
_cprof_top_views=$'functions\nprocesses\nthreads\ncallers'
_cprof_top_sorts=$'self\ntotal\nname'
# the values of --log-level (record, serve, scrape)
_cprof_log_levels=$'error\nwarn\ninfo\ndebug'

# _cprof_takes_arg OPTION: does OPTION take an argument?
_cprof_takes_arg()
{
	case $1 in
	-i | --input | -o | --output | -f | --format | -t | --sample-type | \
		--focus | --ignore | -n | --limit | --title | \
		--data | --since | --from | --to | --group-by | --values | --step | \
		--before-range | --after-range | --fdr | --min-change | --baseline | --range | --by | \
		-l | --label | --time | --name | --retention | \
		-p | --pid | --cgroup | -F | --freq | -d | --duration | --flush-interval | \
		--debuginfo-path | --debuginfod | --remote | --spool | --spool-size | \
		--remote-api | --service-label | --tenant | --basic-auth-user | \
		--max-store-size | --max-memory | --log-level | --downsample | \
		--listen | --config | --token-file | --tls-cert | --tls-key | --max-body | --header-timeout | --max-decompressed | \
		-c | --profile | --seconds | --timeout | \
		--delay | --window | --iterations | --view | -s | --sort | \
		--filter | --function | --type) return 0 ;;
	--from-store) [[ $cmd == import ]] && return 0 ;; # top's is a flag (cmd: the caller's)
	esac
	return 1
}

_cprof()
{
	local cur=${COMP_WORDS[COMP_CWORD]} pre='' _cprof_bin _cprof_list
	local cmd='' cmdi=0 i w opt='' ddash=0 ddashi=0
	COMPREPLY=()
	_cprof_prog

	# the command: the first word that is not a global option
	for ((i = 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w != -* ]]; then
			cmd=$w
			cmdi=$i
			break
		fi
	done

	if [[ -z $cmd ]]; then
		if [[ $cur == -* ]]; then
			_cprof_reply $'--version\n-h\n--help'
		else
			_cprof_words
			_cprof_reply "$_cprof_list"
		fi
		return 0
	fi

	if [[ $cmd == help ]]; then
		if ((COMP_CWORD == cmdi + 1)) && [[ $cur != -* ]]; then
			_cprof_words
			_cprof_reply "$_cprof_list"
		fi
		return 0
	fi

	# walk the command's words before the current one: is the current word
	# the argument of an option, or after "--"?
	for ((i = cmdi + 1; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [[ $w == -- ]]; then
			ddash=1
			ddashi=$i
			break
		fi
		if _cprof_takes_arg "$w"; then
			# "--opt=value" is split by readline into "--opt" "=" "value"
			if [[ ${COMP_WORDS[i + 1]-} == = ]]; then
				if ((i + 1 == COMP_CWORD)); then
					opt=$w # completing "--opt="
					cur=
				elif ((i + 2 == COMP_CWORD)); then
					opt=$w # completing "--opt=val"
				fi
				((i += 2))
			else
				((i + 1 == COMP_CWORD)) && opt=$w
				((i += 1))
			fi
		fi
	done
	if [[ -z $opt && $ddash == 0 && $cur == --*=* ]]; then
		# "--opt=val" as one word ('=' not in COMP_WORDBREAKS)
		if _cprof_takes_arg "${cur%%=*}"; then
			opt=${cur%%=*}
			pre=$opt=
			cur=${cur#*=}
		fi
	fi

	if [[ -n $opt ]]; then
		case $opt in
		-i | --input | -o | --output) _cprof_files ;;
		-c | --config | --token-file | --tls-cert | --tls-key) _cprof_files ;; # record, serve, scrape, --remote
		--log-level) _cprof_reply "$_cprof_log_levels" ;; # record, serve, scrape
		--remote-api) _cprof_reply $'cprof\npyroscope' ;;   # record, scrape, import
		--data | --cgroup | --debuginfo-path | --spool | --from-store) _cprof_dirs ;;
		-f | --format) _cprof_reply "$(_cprof_formats "$cmd")" ;;
		--profile) _cprof_reply "$_cprof_scrape_profiles" ;;
		--view) _cprof_reply "$_cprof_top_views" ;;   # top
		-s | --sort) _cprof_reply "$_cprof_top_sorts" ;; # top
		-p | --pid)
			# scrape -p is --profile; record and top -p is --pid
			if [[ $cmd == scrape ]]; then
				_cprof_reply "$_cprof_scrape_profiles"
			else
				_cprof_pids
			fi
			;;
		esac
		# the others (-t, --focus, -n, -l, --since, --from, --step, --time,
		# --retention, --group-by, -F, -d, --flush-interval, --listen,
		# --max-body, --max-store-size, --remote, --spool-size, --seconds,
		# --timeout, and top's --delay, --window, --filter, --function and
		# --type, whose selector is typed, ...): nothing to offer
		return 0
	fi

	if [[ $cur == -* && $ddash == 0 ]]; then
		_cprof_words "$cmd"
		_cprof_reply "$_cprof_list"
		return 0
	fi

	case $cmd in
	import | merge | diff) _cprof_files ;; # selectors, for merge and diff, are typed
	record | top)
		# the command to run and its arguments come after "--"
		if ((ddash)); then
			_cprof_command $((ddashi + 1))
		else
			_cprof_words "$cmd"
			_cprof_reply "$_cprof_list"
		fi
		;;
	*)
		# query takes a selector (typed) or its inputs with -i, scrape a
		# URL (typed), serve nothing: offer their options
		if ((!ddash)); then
			_cprof_words "$cmd"
			_cprof_reply "$_cprof_list"
		fi
		;;
	esac
	return 0
}

complete -F _cprof cprof
