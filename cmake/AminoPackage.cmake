# A Debian binary package of what cmake/AminoInstall.cmake installs, made by CPack's DEB
# generator under /usr: `cpack -G DEB` in a build directory (or `cmake --build DIR --target
# package`) writes amino_VERSION_ARCH.deb there. dpkg-shlibdeps computes Depends from the
# binaries' libraries (libdb5.3, libseccomp2, the C and C++ runtimes).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME amino)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_PACKAGE_CONTACT "Amino developers <amino@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "ACID transactions for the POSIX file API of unmodified programs")
# The summary is the Description's first line; this is the text under it.
set(CPACK_PACKAGE_DESCRIPTION "amino run traces a command and serves its file calls on Amino mounts from a
Berkeley DB database, each call a transaction; amino txn, libamino and the
Python package group calls into atomic, isolated, durable transactions.")
# Stripped, as Debian ships binaries (the build tree keeps its debugging information).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# Only what the install rules name: no test or benchmark targets are installed.
include(CPack)
