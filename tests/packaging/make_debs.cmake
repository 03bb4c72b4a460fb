# cmake -DCPACK=… -DBUILD_DIR=… -DOUT=… -P make_debs.cmake: the Debian packages of BUILD_DIR into OUT,
# from the binaries already built (cpack installs, strips and runs dpkg-shlibdeps; it compiles nothing).
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${CPACK} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${OUT}
                WORKING_DIRECTORY ${BUILD_DIR} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cpack failed (${rc})")
endif()
file(GLOB debs ${OUT}/*.deb)
list(LENGTH debs n)
if(n LESS 2)
  message(FATAL_ERROR "cpack made ${n} packages: ${debs}")
endif()
message(STATUS "packages: ${debs}")
