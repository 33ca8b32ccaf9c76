# vfab(1) from the CLI's own help: `vfab --help` for the synopsis and the
# verb list, `vfab VERB --help` for each verb's section. Run as a script:
#   cmake -DVFAB=<bin/vfab> -DOUT=<vfab.1> -DVERSION=<x.y.z> -P manpage.cmake

# Text as roff: backslashes doubled, a leading '.' or "'" made literal.
function(vfab_roff text out)
  string(REPLACE "\\" "\\\\" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

execute_process(COMMAND ${VFAB} --help OUTPUT_VARIABLE top RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${VFAB} --help exited ${rc}")
endif()
# The verbs: the first word of each indented line after "verbs:".
string(REGEX REPLACE ".*\nverbs:\n" "" list "${top}")
string(REGEX REPLACE "\n[^ ].*" "" list "${list}")
string(REPLACE "\n" ";" lines "${list}")
set(verbs "")
foreach(line IN LISTS lines)
  if(line MATCHES "^  ([a-z]+)")
    list(APPEND verbs "${CMAKE_MATCH_1}")
  endif()
endforeach()

vfab_roff("${top}" top_roff)
string(TIMESTAMP year "%Y")
set(page ".TH VFAB 1 \"${year}\" \"vfab ${VERSION}\" \"User Commands\"
.SH NAME
vfab \\- a virtual RoCE fabric: namespaces with emulated mlx5 HCAs on one host
.SH SYNOPSIS
.nf
${top_roff}.fi
")
foreach(verb IN LISTS verbs)
  execute_process(COMMAND ${VFAB} ${verb} --help OUTPUT_VARIABLE help RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${VFAB} ${verb} --help exited ${rc}")
  endif()
  vfab_roff("${help}" help_roff)
  string(APPEND page ".SH \"VFAB ${verb}\"\n.nf\n${help_roff}.fi\n")
endforeach()
string(APPEND page ".SH SEE ALSO
.BR ibv_devinfo (1),
.BR ib_write_bw (1),
.BR rping (1);
the documents installed with vfab (README.md, DESIGN.md, TRUST.md).
")
file(WRITE ${OUT} "${page}")
