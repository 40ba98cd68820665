# Rendered by `autotune compare`; re-run with: gnuplot plots.gp
set terminal pngcairo size 1000,620 enhanced font 'Sans,11'
set output 'best_so_far.png'
set title 'Quality of the recommended configuration (median, quartile band)'
set xlabel 'trials'
set ylabel 'fraction of the optimum'
set key bottom right
set grid
set yrange [*:1.02]
set xrange [1:60]
plot 'plot_bo_best_so_far.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 1 notitle, \
     'plot_bo_best_so_far.dat' using 1:2 with lines lw 2.5 lc 1 title 'bo', \
     'plot_anneal_best_so_far.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 2 notitle, \
     'plot_anneal_best_so_far.dat' using 1:2 with lines lw 2.5 lc 2 title 'anneal', \
     'plot_random_best_so_far.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 3 notitle, \
     'plot_random_best_so_far.dat' using 1:2 with lines lw 2.5 lc 3 title 'random', \
     'plot_heuristic_best_so_far.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 4 notitle, \
     'plot_heuristic_best_so_far.dat' using 1:2 with lines lw 2.5 lc 4 title 'heuristic'

reset
set output 'best_so_far_time.png'
set title 'Quality of the recommended configuration against the seconds spent (median, quartile band)'
set xlabel "seconds (the trials' own, summed)"
set ylabel 'fraction of the optimum'
set key bottom right
set grid
set yrange [*:1.02]
plot 'plot_bo_best_so_far_time.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 1 notitle, \
     'plot_bo_best_so_far_time.dat' using 1:2 with lines lw 2.5 lc 1 title 'bo', \
     'plot_anneal_best_so_far_time.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 2 notitle, \
     'plot_anneal_best_so_far_time.dat' using 1:2 with lines lw 2.5 lc 2 title 'anneal', \
     'plot_random_best_so_far_time.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 3 notitle, \
     'plot_random_best_so_far_time.dat' using 1:2 with lines lw 2.5 lc 3 title 'random', \
     'plot_heuristic_best_so_far_time.dat' using 1:3:4 with filledcurves fs transparent solid 0.18 lc 4 notitle, \
     'plot_heuristic_best_so_far_time.dat' using 1:2 with lines lw 2.5 lc 4 title 'heuristic'

reset
set output 'evals_to_95.png'
set title 'Trials until the recommendation reaches 95% of the optimum'
set ylabel 'trials (61 = never)'
set style fill solid 0.3
set style boxplot outliers pointtype 7
set boxwidth 0.5
set grid y
set xtics ('bo' 1, 'anneal' 2, 'random' 3, 'heuristic' 4)
set xrange [0.3:4.7]
set yrange [0:63]
plot 'plot_bo_evals95.dat' using (1):1 with boxplot lc 1 notitle, \
     'plot_anneal_evals95.dat' using (2):1 with boxplot lc 2 notitle, \
     'plot_random_evals95.dat' using (3):1 with boxplot lc 3 notitle, \
     'plot_heuristic_evals95.dat' using (4):1 with boxplot lc 4 notitle
