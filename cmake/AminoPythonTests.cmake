# amino_python_tests(PREFIX <p> LABEL <l> ENVIRONMENT <var=value>... [DEADLINE]
#                    [SKIP_RETURN_CODE <n>] TESTS <entry>...)
# Registers one ctest test <p>.<name> per entry "name:driver:timeout[:arg,arg...]": the Python
# driver (in the calling directory) run with its extra arguments. With DEADLINE, the driver is
# also given --deadline <timeout - 10>: it stops every command at its own deadline and reports a
# hang, with the command, before ctest's timeout kills only the driver.
find_package(Python3 REQUIRED COMPONENTS Interpreter)

function(amino_python_tests)
  cmake_parse_arguments(T "DEADLINE" "PREFIX;LABEL;SKIP_RETURN_CODE" "ENVIRONMENT;TESTS" ${ARGN})
  foreach(entry ${T_TESTS})
    string(REPLACE ":" ";" parts ${entry})
    list(GET parts 0 name)
    list(GET parts 1 driver)
    list(GET parts 2 timeout)
    set(arguments "")
    list(LENGTH parts fields)
    if(fields GREATER 3)
      list(GET parts 3 extra)
      string(REPLACE "," ";" arguments "${extra}")
    endif()
    if(T_DEADLINE)
      math(EXPR deadline "${timeout} - 10")
      list(PREPEND arguments --deadline ${deadline})
    endif()
    add_test(NAME ${T_PREFIX}.${name}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/${driver} ${arguments})
    set_tests_properties(${T_PREFIX}.${name} PROPERTIES
      ENVIRONMENT "${T_ENVIRONMENT}"
      LABELS "${T_LABEL}"
      TIMEOUT ${timeout})
    if(DEFINED T_SKIP_RETURN_CODE)
      set_tests_properties(${T_PREFIX}.${name} PROPERTIES SKIP_RETURN_CODE ${T_SKIP_RETURN_CODE})
    endif()
  endforeach()
endfunction()
