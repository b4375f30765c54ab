# The HTTP half of korovod_kube (config.cc, rest_client.cc, http_server.cc and their
# third-party libraries join the library in CMakeLists.txt): its private source, its version
# stamp and its unit tests. Included at the end of CMakeLists.txt.

# The pure REST mapping (URLs, queries, Status parsing): no cpprestsdk, so it compiles fast.
target_sources(korovod_kube PRIVATE ${CMAKE_CURRENT_LIST_DIR}/rest_mapping.cc)
# The User-Agent is "korovod/<project version>".
set_property(SOURCE ${CMAKE_CURRENT_LIST_DIR}/rest_client.cc APPEND PROPERTY
             COMPILE_DEFINITIONS KOROVOD_VERSION="${PROJECT_VERSION}")

if(KOROVOD_BUILD_TESTS)
  foreach(t config rest_mapping rest_client http_server)
    if(EXISTS ${CMAKE_CURRENT_LIST_DIR}/${t}_test.cc)
      korovod_unit_test(NAME kube_${t}_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/${t}_test.cc
                        LIBS korovod_kube korovod_kube_testing)
    endif()
  endforeach()
endif()
