# What `cmake --install` puts where (GNUInstallDirs: Debian's multiarch libdir under /usr):
# bin/amino; libamino and librvm, shared (with SONAMEs) and static; include/amino/*.h;
# pkg-config files (amino.pc, amino-rvm.pc); a CMake package (find_package(Amino): imported
# targets Amino::amino, Amino::amino_static, Amino::rvm, Amino::rvm_static); the example
# programs; bash completion. (The manual pages install from man/.)
include(CMakePackageConfigHelpers)

install(TARGETS amino RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS libamino libamino_static rvm rvm_static
  EXPORT AminoTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES include/amino/amino.h include/amino/rvm.h
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/amino)

# pkg-config: the prefix is found from the .pc file's own place, so the files stay right under
# any --prefix or DESTDIR.
file(RELATIVE_PATH AMINO_PC_TO_PREFIX "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
string(REGEX REPLACE "/$" "" AMINO_PC_TO_PREFIX "${AMINO_PC_TO_PREFIX}")
foreach(pc amino amino-rvm)
  configure_file(cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()

set(AMINO_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Amino)
install(EXPORT AminoTargets NAMESPACE Amino:: DESTINATION ${AMINO_CMAKE_DIR})
configure_package_config_file(cmake/AminoConfig.cmake.in ${PROJECT_BINARY_DIR}/AminoConfig.cmake
  INSTALL_DESTINATION ${AMINO_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/AminoConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/AminoConfig.cmake ${PROJECT_BINARY_DIR}/AminoConfigVersion.cmake
  DESTINATION ${AMINO_CMAKE_DIR})

install(FILES examples/counter.c examples/maildeliver.c examples/passwd_update.c
  examples/README.md DESTINATION ${CMAKE_INSTALL_DATADIR}/amino/examples)
install(DIRECTORY profiles/ DESTINATION ${CMAKE_INSTALL_DATADIR}/amino/profiles
  FILES_MATCHING PATTERN "*.profile")
install(FILES cmake/amino.bash-completion DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
  RENAME amino)

# The Python package, where Debian's python3 finds modules of packages installed under /usr
# (under another prefix, that prefix's directory goes on PYTHONPATH).
set(AMINO_INSTALL_PYTHONDIR "lib/python3/dist-packages" CACHE STRING
  "Where the Python package is installed, relative to the prefix")
install(FILES python/amino/__init__.py DESTINATION ${AMINO_INSTALL_PYTHONDIR}/amino)
