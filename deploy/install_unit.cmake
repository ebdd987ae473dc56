# Run by `cmake --install` (install(SCRIPT) in the top-level CMakeLists.txt):
# installs deploy/htamerge-serve@.service into <prefix>/lib/systemd/system
# (systemd reads /usr/lib and /usr/local/lib/systemd/system) with ExecStart
# naming the installed binary. Done at install time because only then is
# the prefix final (cmake --install --prefix DIR).
# In: HM_UNIT_SRC (the unit), HM_UNIT_BINDIR (CMAKE_INSTALL_BINDIR).
if(IS_ABSOLUTE "${HM_UNIT_BINDIR}")
  set(bindir "${HM_UNIT_BINDIR}")
else()
  set(bindir "${CMAKE_INSTALL_PREFIX}/${HM_UNIT_BINDIR}")
endif()
file(READ "${HM_UNIT_SRC}" unit)
string(REPLACE "/usr/local/bin/htamerge" "${bindir}/htamerge" unit "${unit}")
set(dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/lib/systemd/system")
message(STATUS "Installing: ${dest}/htamerge-serve@.service")
file(MAKE_DIRECTORY "${dest}")
file(WRITE "${dest}/htamerge-serve@.service" "${unit}")
list(APPEND CMAKE_INSTALL_MANIFEST_FILES "${dest}/htamerge-serve@.service")
