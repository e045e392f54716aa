# Run at install time (install(CODE) in CMakeLists.txt): writes vkcuda.pc for the
# prefix being installed to, which `cmake --install --prefix` may have changed
# since configuration. Inputs: VKCUDA_PC_* variables set by the install rule.
set(prefix "${CMAKE_INSTALL_PREFIX}")
foreach(kind LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE "${VKCUDA_PC_${kind}}")
    set(VKCUDA_PC_${kind}_FULL "${VKCUDA_PC_${kind}}")
  else()
    set(VKCUDA_PC_${kind}_FULL "\${prefix}/${VKCUDA_PC_${kind}}")
  endif()
endforeach()
configure_file("${VKCUDA_PC_TEMPLATE}" "${VKCUDA_PC_SCRATCH}" @ONLY)
if(IS_ABSOLUTE "${VKCUDA_PC_LIBDIR}")
  set(pc_dest "${VKCUDA_PC_LIBDIR}/pkgconfig")
else()
  set(pc_dest "${CMAKE_INSTALL_PREFIX}/${VKCUDA_PC_LIBDIR}/pkgconfig")
endif()
# file(INSTALL) adds DESTDIR and records the file in install_manifest.txt.
file(INSTALL DESTINATION "${pc_dest}" TYPE FILE FILES "${VKCUDA_PC_SCRATCH}")
