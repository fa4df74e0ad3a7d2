# Shaders: glslc -> spirv-val -> embedded C array. Sets SHADER_SOURCES (the generated C files
# and the name -> SPIR-V table) for the library.
file(GLOB OSCAR_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/shaders/*.comp)
set(SHADER_OUT ${CMAKE_BINARY_DIR}/shaders)
file(MAKE_DIRECTORY ${SHADER_OUT})
set(SHADER_SOURCES)
set(SHADER_TABLE_DECLS "")
set(SHADER_TABLE_ROWS "")
foreach(src ${OSCAR_SHADERS})
  get_filename_component(name ${src} NAME_WE)
  set(spv ${SHADER_OUT}/${name}.spv)
  set(csrc ${SHADER_OUT}/${name}.spv.c)
  set(asm_cmd)
  if(SPIRV_DIS)
    set(asm_cmd COMMAND ${SPIRV_DIS} ${spv} -o ${SHADER_OUT}/${name}.spvasm)
  endif()
  add_custom_command(
    OUTPUT ${csrc}
    COMMAND ${GLSLC} --target-env=vulkan1.2 -O -I${CMAKE_SOURCE_DIR}/shaders -I${CMAKE_SOURCE_DIR}/include
            -MD -MF ${spv}.d -MT ${csrc} -o ${spv} ${src}
    COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv}
    ${asm_cmd}
    COMMAND ${CMAKE_COMMAND} -DIN=${spv} -DOUT=${csrc} -DNAME=${name} -P ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${src} ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPFILE ${spv}.d
    COMMENT "glslc + spirv-val ${name}.comp"
    VERBATIM)
  list(APPEND SHADER_SOURCES ${csrc})
  string(APPEND SHADER_TABLE_DECLS "extern const uint32_t ovk_spv_${name}[]; extern const size_t ovk_spv_${name}_size;\n")
  string(APPEND SHADER_TABLE_ROWS "    { \"${name}\", ovk_spv_${name}, &ovk_spv_${name}_size },\n")
endforeach()
configure_file(${CMAKE_SOURCE_DIR}/cmake/shader_table.c.in ${SHADER_OUT}/shader_table.c @ONLY)
list(APPEND SHADER_SOURCES ${SHADER_OUT}/shader_table.c)

