# Included after llama.cpp's project() calls (CMAKE_PROJECT_INCLUDE): once the whole
# tree is configured, every target leaves the default build but llama-server and the
# CPU backends loaded at run time (module libraries), so `cmake --build .` compiles the
# server and what it links, not the twenty other tools llama.cpp ships nor their libraries.
include_guard(GLOBAL)

function(argtui_collect_targets directory out)
    get_property(targets DIRECTORY "${directory}" PROPERTY BUILDSYSTEM_TARGETS)
    get_property(children DIRECTORY "${directory}" PROPERTY SUBDIRECTORIES)
    foreach(child IN LISTS children)
        argtui_collect_targets("${child}" child_targets)
        list(APPEND targets ${child_targets})
    endforeach()
    set(${out} ${targets} PARENT_SCOPE)
endfunction()

function(argtui_server_only)
    argtui_collect_targets("${CMAKE_SOURCE_DIR}" targets)
    set(excluded 0)
    foreach(target IN LISTS targets)
        get_target_property(type "${target}" TYPE)
        if(NOT type MATCHES "^(MODULE_LIBRARY|INTERFACE_LIBRARY)$" AND NOT target STREQUAL "llama-server")
            set_property(TARGET "${target}" PROPERTY EXCLUDE_FROM_ALL TRUE)
            math(EXPR excluded "${excluded} + 1")
        endif()
    endforeach()
    message(STATUS "argtui: building llama-server only (${excluded} other targets left out of the default build)")
endfunction()

cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL argtui_server_only)
