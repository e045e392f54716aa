# vkcuda_strict_warnings(<target>): the warning flags every C and C++ program of this
# project is built with (STYLE.md, "Tests"): -Wall -Wextra -Wpedantic -Werror with
# GCC and Clang, /W4 /WX with MSVC.
function(vkcuda_strict_warnings target)
  target_compile_options(${target} PRIVATE
    "$<$<OR:$<COMPILE_LANG_AND_ID:C,GNU,Clang,AppleClang>,$<COMPILE_LANG_AND_ID:CXX,GNU,Clang,AppleClang>>:-Wall;-Wextra;-Wpedantic;-Werror>"
    "$<$<OR:$<COMPILE_LANG_AND_ID:C,MSVC>,$<COMPILE_LANG_AND_ID:CXX,MSVC>>:/W4;/WX>")
endfunction()
