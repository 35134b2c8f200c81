# Included from Ceph's src/CMakeLists.txt (by src/tools/ceph-integrate) before
# the common library is assembled: the engine's option registry and its
# translation into Ceph's option table join Ceph's common objects, so every
# Ceph binary knows the hybridstore_* options.
set(HS_SRC ${HYBRIDSTORE_SOURCE_DIR}/src)
file(GLOB HS_OPTION_SOURCES CONFIGURE_DEPENDS
  ${HS_SRC}/hscommon/config.cc
  ${HS_SRC}/hsoptions/*.cc)
add_library(hybridstore-options-objs OBJECT
  ${HS_OPTION_SOURCES}
  ${HS_SRC}/hybridstore/ceph/ceph_options.cc)
target_include_directories(hybridstore-options-objs PRIVATE ${HS_SRC})
target_link_libraries(hybridstore-options-objs PRIVATE fmt::fmt)
set_target_properties(hybridstore-options-objs PROPERTIES POSITION_INDEPENDENT_CODE ON)
